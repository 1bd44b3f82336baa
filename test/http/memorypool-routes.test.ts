import { describe, expect, it } from 'vitest';
import { build } from '../helper.js';

const json = (body: unknown) => ({ 'content-type': 'application/json', payload: JSON.stringify(body) });

describe('MemoryPool protocol', () => {
  it('GET /health reports the count and needs no token', async () => {
    const { app } = await build({ token: 'secret-token' });
    const empty = await app.inject({ method: 'GET', url: '/health' });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ ok: true, service: 'memorypool', count: 0 });
    await app.inject({ method: 'POST', url: '/mem', headers: { authorization: 'Bearer secret-token' }, payload: { text: 'hello' } });
    expect((await app.inject({ method: 'GET', url: '/health' })).json().count).toBe(1);
  });

  it('POST /mem stores a memory with defaults and returns it whole (201)', async () => {
    const { app } = await build();
    const response = await app.inject({ method: 'POST', url: '/mem', payload: { text: 'Caroline adopted a dog named Max' } });
    expect(response.statusCode).toBe(201);
    const memory = response.json();
    expect(memory).toMatchObject({ text: 'Caroline adopted a dog named Max', tags: [], importance: 0.5, source: 'cli', user_id: 'default' });
    expect(typeof memory.id).toBe('string');
    expect(memory.id.length).toBeGreaterThan(0);
    expect(new Date(memory.created_at).toISOString()).toBe(memory.created_at);
    expect(memory).not.toHaveProperty('vec');
    expect(memory).not.toHaveProperty('seq');

    const full = await app.inject({ method: 'POST', url: '/mem', payload: { text: 'x', tags: ['a', 'b'], importance: 0.9, source: 'agent' } });
    expect(full.json()).toMatchObject({ tags: ['a', 'b'], importance: 0.9, source: 'agent' });
  });

  it.each([
    [{}, 'text'],
    [{ text: '' }, 'text'],
    [{ text: '   ' }, 'text'],
    [{ text: 5 }, 'text'],
    [{ text: 'a', importance: 1.5 }, 'importance'],
    [{ text: 'a', importance: -0.1 }, 'importance'],
    [{ text: 'a', importance: '0.5' }, 'importance'],
    [{ text: 'a', tags: 'x' }, 'tags'],
    [{ text: 'a', tags: [1] }, 'tags'],
    [{ text: 'a', source: 3 }, 'source'],
  ])('POST /mem %j is a 400 naming %s', async (body, field) => {
    const { app, service } = await build();
    const response = await app.inject({ method: 'POST', url: '/mem', payload: body as object });
    expect(response.statusCode).toBe(400);
    expect(response.json().detail.reason).toContain(field);
    expect(service.count).toBe(0);
  });

  it('malformed JSON is a 400 with the error body, not a 500', async () => {
    const { app } = await build();
    for (const payload of ['{"text": ', '{text: 1}', 'NaN', '{"text": "a", "importance": Infinity}', '[1,]']) {
      const response = await app.inject({ method: 'POST', url: '/mem', headers: { 'content-type': 'application/json' }, payload });
      expect(response.statusCode).toBe(400);
      expect(response.json().detail.reason).toMatch(/JSON/);
    }
  });

  it('GET /mem/search ranks by relevance with scores, honours tag and limit', async () => {
    const { app } = await build();
    const add = (text: string, tags: string[] = []) => app.inject({ method: 'POST', url: '/mem', payload: { text, tags } });
    await add('The quarterly budget review is on Friday', ['work']);
    await add('My sister loves hiking in the mountains', ['family']);
    await add('Hiking boots need new laces', ['gear']);
    const response = await app.inject({ method: 'GET', url: '/mem/search?q=hiking%20mountains' });
    expect(response.statusCode).toBe(200);
    const hits = response.json();
    expect(hits[0].text).toBe('My sister loves hiking in the mountains');
    expect(hits.every((hit: { score: unknown }) => typeof hit.score === 'number')).toBe(true);
    for (let i = 1; i < hits.length; i++) expect(hits[i - 1].score).toBeGreaterThanOrEqual(hits[i].score);

    const tagged = (await app.inject({ method: 'GET', url: '/mem/search?q=hiking&tag=gear' })).json();
    expect(tagged.map((hit: { text: string }) => hit.text)).toEqual(['Hiking boots need new laces']);
    expect((await app.inject({ method: 'GET', url: '/mem/search?q=hiking&limit=1' })).json()).toHaveLength(1);
  });

  it.each(['/mem/search', '/mem/search?q=', '/mem/search?q=a&limit=0', '/mem/search?q=a&limit=abc', '/mem/search?q=a&limit=1.5', '/mem/list?limit=-3'])(
    'GET %s is a 400',
    async (url) => {
      const { app } = await build();
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode).toBe(400);
      expect(typeof response.json().detail.reason).toBe('string');
    },
  );

  it('GET /mem/list is newest first, with tag and limit', async () => {
    const { app } = await build();
    for (const [text, tags] of [['first', ['x']], ['second', []], ['third', ['x']]] as const) {
      await app.inject({ method: 'POST', url: '/mem', payload: { text, tags } });
    }
    const all = (await app.inject({ method: 'GET', url: '/mem/list' })).json();
    expect(all.map((memory: { text: string }) => memory.text)).toEqual(['third', 'second', 'first']);
    const tagged = (await app.inject({ method: 'GET', url: '/mem/list?tag=x&limit=1' })).json();
    expect(tagged.map((memory: { text: string }) => memory.text)).toEqual(['third']);
  });

  it('GET and DELETE /mem/{id}: 200, then 404', async () => {
    const { app } = await build();
    const { id } = (await app.inject({ method: 'POST', url: '/mem', payload: { text: 'to be forgotten' } })).json();
    const got = await app.inject({ method: 'GET', url: `/mem/${id}` });
    expect(got.statusCode).toBe(200);
    expect(got.json().text).toBe('to be forgotten');
    const deleted = await app.inject({ method: 'DELETE', url: `/mem/${id}` });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ deleted: id });
    expect((await app.inject({ method: 'GET', url: `/mem/${id}` })).statusCode).toBe(404);
    const again = await app.inject({ method: 'DELETE', url: `/mem/${id}` });
    expect(again.statusCode).toBe(404);
    expect(again.json().detail.reason).toContain(id);
    expect((await app.inject({ method: 'GET', url: '/mem/search?q=forgotten' })).json()).toEqual([]);
  });

  it('user_id scopes every /mem route', async () => {
    const { app } = await build();
    const mine = (await app.inject({ method: 'POST', url: '/mem', payload: { text: 'alice secret plan', user_id: 'alice' } })).json();
    expect(mine.user_id).toBe('alice');
    expect((await app.inject({ method: 'GET', url: '/mem/search?q=secret' })).json()).toEqual([]);
    expect((await app.inject({ method: 'GET', url: '/mem/search?q=secret&user_id=bob' })).json()).toEqual([]);
    expect((await app.inject({ method: 'GET', url: '/mem/search?q=secret&user_id=alice' })).json()).toHaveLength(1);
    expect((await app.inject({ method: 'GET', url: `/mem/${mine.id}` })).statusCode).toBe(404);
    expect((await app.inject({ method: 'DELETE', url: `/mem/${mine.id}?user_id=bob` })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: `/mem/${mine.id}?user_id=alice` })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: '/mem/list?user_id=alice' })).json()).toHaveLength(1);
  });

  it('unknown routes are a 404 with the error body', async () => {
    const { app } = await build();
    const response = await app.inject({ method: 'GET', url: '/nope' });
    expect(response.statusCode).toBe(404);
    expect(response.json().detail.reason).toContain('/nope');
  });
});

describe('POST /invoke', () => {
  const call = (params: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    method: 'POST' as const,
    url: '/invoke',
    ...json({ tool_id: 't1', tool: 'memorypool', invoked_by: 'agent', params, ...extra }),
  });

  it('routes add, search, list, get, delete and stats', async () => {
    const { app } = await build();
    const added = await app.inject(call({ action: 'add', text: 'The launch moved to March', tags: ['launch'], importance: 0.8 }));
    expect(added.statusCode).toBe(200);
    const memory = added.json();
    expect(memory).toMatchObject({ text: 'The launch moved to March', tags: ['launch'], importance: 0.8, source: 'invoke' });

    const search = (await app.inject(call({ action: 'search', query: 'when is the launch', limit: 5 }))).json();
    expect(search[0]).toMatchObject({ id: memory.id });
    expect(typeof search[0].score).toBe('number');
    expect((await app.inject(call({ action: 'list', tag: 'launch' }))).json()).toHaveLength(1);
    expect((await app.inject(call({ action: 'get', id: memory.id }))).json().id).toBe(memory.id);
    const stats = (await app.inject(call({ action: 'stats' }))).json();
    expect(stats.count).toBe(1);
    expect(stats.per_user[0]).toMatchObject({ user_id: 'default', count: 1 });
    expect(stats.per_user[0].bytes_on_disk).toBeGreaterThan(0);
    expect((await app.inject(call({ action: 'delete', id: memory.id }))).json()).toEqual({ deleted: memory.id });
    expect((await app.inject(call({ action: 'get', id: memory.id }))).statusCode).toBe(404);
  });

  it('falls back to params.tool when there is no action', async () => {
    const { app } = await build();
    const response = await app.inject(call({ tool: 'add', text: 'via tool' }));
    expect(response.statusCode).toBe(200);
    expect(response.json().text).toBe('via tool');
  });

  it.each([
    [{ action: 'fly' }, 'Unknown action'],
    [{}, 'action'],
    [{ action: 'add' }, 'text'],
    [{ action: 'add', text: 'a', importance: 2 }, 'importance'],
    [{ action: 'add', text: 'a', tags: [1, 2] }, 'tags'],
    [{ action: 'search' }, 'query'],
    [{ action: 'search', query: 'a', limit: 0 }, 'limit'],
    [{ action: 'search', query: 'a', limit: 2.5 }, 'limit'],
    [{ action: 'delete' }, 'id'],
  ])('params %j is a 400 mentioning %s', async (params, reason) => {
    const { app } = await build();
    const response = await app.inject(call(params));
    expect(response.statusCode).toBe(400);
    expect(response.json().detail.reason).toContain(reason);
  });

  it('an unknown id is a 404; a non-object params is a 400', async () => {
    const { app } = await build();
    expect((await app.inject(call({ action: 'delete', id: 'missing' }))).statusCode).toBe(404);
    const bad = await app.inject({ method: 'POST', url: '/invoke', payload: { params: 'add' } });
    expect(bad.statusCode).toBe(400);
  });
});

describe('tokens', () => {
  const routes = [
    { method: 'POST' as const, url: '/mem', payload: { text: 'a' } },
    { method: 'GET' as const, url: '/mem/search?q=a' },
    { method: 'GET' as const, url: '/mem/list' },
    { method: 'GET' as const, url: '/mem/stats' },
    { method: 'GET' as const, url: '/mem/some-id' },
    { method: 'DELETE' as const, url: '/mem/some-id' },
    { method: 'POST' as const, url: '/invoke', payload: { params: { action: 'stats' } } },
    { method: 'POST' as const, url: '/add', payload: { request_id: 'r', user_id: 'u', session_id: 's', messages: [{ role: 'a', content: 'b' }] } },
    { method: 'POST' as const, url: '/search', payload: { query: 'a', user_id: 'u', top_k: 5 } },
    { method: 'DELETE' as const, url: '/users/u' },
  ];

  it('every route but /health refuses missing and wrong credentials in all three forms', async () => {
    const { app } = await build({ token: 'right-token-123' });
    for (const route of routes) {
      for (const headers of [{}, { authorization: 'Bearer wrong' }, { authorization: 'Token wrong' }, { 'x-api-key': 'wrong' }, { authorization: 'Basic right-token-123' }, { authorization: 'Bearer' }]) {
        const response = await app.inject({ ...route, headers });
        expect(response.statusCode, `${route.method} ${route.url} ${JSON.stringify(headers)}`).toBe(401);
        expect(typeof response.json().detail.reason).toBe('string');
      }
    }
    expect((await app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });

  it('accepts Bearer, Token and X-Api-Key', async () => {
    const { app } = await build({ token: 'right-token-123' });
    for (const headers of [{ authorization: 'Bearer right-token-123' }, { authorization: 'Token right-token-123' }, { 'x-api-key': 'right-token-123' }, { authorization: 'bearer right-token-123' }]) {
      for (const route of routes) {
        const response = await app.inject({ ...route, headers });
        expect(response.statusCode, `${route.method} ${route.url} ${JSON.stringify(headers)}`).not.toBe(401);
        expect(response.statusCode).toBeLessThan(500);
      }
    }
  });
});
