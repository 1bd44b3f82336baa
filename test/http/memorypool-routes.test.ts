import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { packageVersion } from '../../src/http/package-files.js';
import { build, readFilesUnder } from '../support/helper.js';

const json = (body: unknown) => ({ 'content-type': 'application/json', payload: JSON.stringify(body) });

describe('MemoryPool protocol', () => {
  it('GET /health reports the count and needs no token', async () => {
    const { app } = await build({ token: 'secret-token' });
    const empty = await app.inject({ method: 'GET', url: '/health' });
    expect(empty.statusCode).toBe(200);
    expect(empty.json()).toEqual({ ok: true, service: 'memorypool', version: packageVersion(), count: 0 });
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

describe('memories that change (PATCH /mem/{id}, GET /mem/{id}/history)', () => {
  const add = async (app: FastifyInstance, body: Record<string, unknown>) => {
    const response = await app.inject({ method: 'POST', url: '/mem', payload: body });
    expect(response.statusCode, response.body).toBe(201);
    return response.json();
  };
  const texts = (hits: Array<{ text: string }>) => hits.map((hit) => hit.text);

  it('PATCH /mem/{id} updates in place: same id, version + 1, updated_at; searches find the new text, never the old', async () => {
    const { app } = await build();
    const created = await add(app, { text: 'I live in Paris near the Seine', tags: ['home'] });
    expect(created).toMatchObject({ version: 1, updated_at: created.created_at, metadata: {} });
    await add(app, { text: 'My cat is called Pixel' });
    const patched = await app.inject({ method: 'PATCH', url: `/mem/${created.id}`, payload: { text: 'I moved to Berlin by the Spree', metadata: { city: 'Berlin' } } });
    expect(patched.statusCode, patched.body).toBe(200);
    const updated = patched.json();
    expect(updated).toMatchObject({ id: created.id, text: 'I moved to Berlin by the Spree', tags: ['home'], version: 2, metadata: { city: 'Berlin' }, created_at: created.created_at });
    expect(Date.parse(updated.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.created_at));
    expect((await app.inject({ method: 'GET', url: `/mem/${created.id}` })).json()).toEqual(updated);
    expect(texts((await app.inject({ method: 'GET', url: '/mem/search?q=Spree%20Berlin' })).json())[0]).toBe('I moved to Berlin by the Spree');
    const old = (await app.inject({ method: 'GET', url: '/mem/search?q=Paris%20Seine&limit=10' })).json();
    expect(texts(old)).not.toContain('I live in Paris near the Seine');

    const again = (await app.inject({ method: 'PATCH', url: `/mem/${created.id}`, payload: { importance: 0.9, tags: [] } })).json();
    expect(again).toMatchObject({ version: 3, importance: 0.9, tags: [], text: 'I moved to Berlin by the Spree', metadata: { city: 'Berlin' } });
    const history = await app.inject({ method: 'GET', url: `/mem/${created.id}/history` });
    expect(history.statusCode).toBe(200);
    expect(history.json()).toEqual({
      id: created.id,
      versions: [
        { version: 1, text: 'I live in Paris near the Seine', tags: ['home'], importance: 0.5, metadata: {}, updated_at: created.created_at },
        { version: 2, text: 'I moved to Berlin by the Spree', tags: ['home'], importance: 0.5, metadata: { city: 'Berlin' }, updated_at: updated.updated_at },
        { version: 3, text: 'I moved to Berlin by the Spree', tags: [], importance: 0.9, metadata: { city: 'Berlin' }, updated_at: again.updated_at },
      ],
    });
  });

  it.each([
    [{}, 'at least one'],
    [{ user_id: 'default' }, 'at least one'],
    [{ text: '  ' }, 'text'],
    [{ importance: 2 }, 'importance'],
    [{ tags: 'x' }, 'tags'],
    [{ metadata: { nested: { a: 1 } } }, 'metadata.nested'],
  ])('PATCH %j is a 400 naming %s; nothing changes', async (body, reason) => {
    const { app } = await build();
    const created = await add(app, { text: 'unchanged' });
    const response = await app.inject({ method: 'PATCH', url: `/mem/${created.id}`, payload: body });
    expect(response.statusCode).toBe(400);
    expect(response.json().detail.reason).toContain(reason);
    expect((await app.inject({ method: 'GET', url: `/mem/${created.id}` })).json()).toEqual(created);
  });

  it('PATCH and history of an unknown id are 404s; a deleted memory takes its history with it, off the disk too', async () => {
    const { app, dataDir } = await build();
    expect((await app.inject({ method: 'PATCH', url: '/mem/missing', payload: { text: 'x' } })).statusCode).toBe(404);
    expect((await app.inject({ method: 'GET', url: '/mem/missing/history' })).statusCode).toBe(404);
    const created = await add(app, { text: 'The deploy key is kiwi-one' });
    await app.inject({ method: 'PATCH', url: `/mem/${created.id}`, payload: { text: 'The deploy key was rotated to mango-two' } });
    const onDisk = async () => (await readFilesUnder(dataDir)).join('\n');
    expect(await onDisk()).toContain('kiwi-one');
    expect((await app.inject({ method: 'DELETE', url: `/mem/${created.id}` })).statusCode).toBe(200);
    expect((await app.inject({ method: 'GET', url: `/mem/${created.id}/history` })).statusCode).toBe(404);
    expect(await onDisk()).not.toContain('kiwi-one');
    expect(await onDisk()).not.toContain('mango-two');
  });

  it('metadata is stored and returned on every answer; invalid metadata is a 400 naming the key', async () => {
    const { app } = await build();
    const created = await add(app, { text: 'Standup at nine', metadata: { project: 'styx', priority: 2, done: false } });
    expect(created.metadata).toEqual({ project: 'styx', priority: 2, done: false });
    expect((await app.inject({ method: 'GET', url: '/mem/list' })).json()[0].metadata).toEqual(created.metadata);
    expect((await app.inject({ method: 'GET', url: '/mem/search?q=standup' })).json()[0].metadata).toEqual(created.metadata);
    const tooMany = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]));
    for (const [metadata, reason] of [
      [{ bad: null }, 'metadata.bad'],
      [{ bad: [1] }, 'metadata.bad'],
      [{ long: 'x'.repeat(1001) }, 'metadata.long'],
      [{ ['k'.repeat(129)]: 1 }, 'keys must be 1-128 characters'],
      [tooMany, 'at most 64 keys'],
      ['flat', 'metadata must be an object'],
    ] as const) {
      const response = await app.inject({ method: 'POST', url: '/mem', payload: { text: 'x', metadata } });
      expect(response.statusCode, JSON.stringify(metadata).slice(0, 60)).toBe(400);
      expect(response.json().detail.reason).toContain(reason);
    }
    expect((await add(app, { text: 'at the bounds', metadata: { ['k'.repeat(128)]: 'v'.repeat(1000), ...Object.fromEntries(Array.from({ length: 63 }, (_, i) => [`k${i}`, i])) } })).version).toBe(1);
  });

  it('search and list filter on meta.<key> (as the stored type, AND), since and until, beside tag', async () => {
    const { app } = await build();
    const alpha = await add(app, { text: 'deploy notes for alpha', tags: ['ops'], metadata: { project: 'alpha', priority: 2, urgent: true } });
    const beta = await add(app, { text: 'deploy notes for beta', metadata: { project: 'beta', priority: '2' } });
    const last = await add(app, { text: 'deploy notes without metadata' });
    const search = async (query: string) => texts((await app.inject({ method: 'GET', url: `/mem/search?q=deploy%20notes&${query}` })).json()).sort();
    const list = async (query: string) => texts((await app.inject({ method: 'GET', url: `/mem/list?${query}` })).json()).sort();
    for (const find of [search, list]) {
      expect(await find('meta.project=alpha')).toEqual([alpha.text]);
      expect(await find('meta.priority=2')).toEqual([alpha.text, beta.text]);
      expect(await find('meta.priority=2&meta.project=beta')).toEqual([beta.text]);
      expect(await find('meta.urgent=true')).toEqual([alpha.text]);
      expect(await find('meta.urgent=yes')).toEqual([]);
      expect(await find('meta.project=alpha&tag=ops')).toEqual([alpha.text]);
      expect(await find('meta.project=beta&tag=ops')).toEqual([]);
      expect(await find(`since=${encodeURIComponent(beta.created_at)}`)).toContain(beta.text);
      expect(await find(`since=${Date.parse(last.created_at) + 1}`)).toEqual([]);
      expect(await find(`until=${encodeURIComponent(alpha.created_at)}&meta.project=alpha`)).toEqual([alpha.text]);
      expect(await find(`until=${Date.parse(alpha.created_at) - 1}`)).toEqual([]);
      expect(await find(`since=2000-01-01&until=${Date.now() + 60_000}`)).toHaveLength(3);
    }
    for (const query of ['since=yesterday', 'until=2024-13-45', 'since=2030-01-01&until=2020-01-01', 'meta.=x', 'meta.a=1&meta.a=2']) {
      for (const url of [`/mem/search?q=deploy&${query}`, `/mem/list?${query}`]) {
        const response = await app.inject({ method: 'GET', url });
        expect(response.statusCode, url).toBe(400);
        expect(response.json().error).toBe(response.json().detail.reason);
      }
    }
  });

  it('a filtered search ranks among the matching memories only: a rare filter still fills the limit', async () => {
    const { app, service } = await build({ service: { weights: { exhaustiveLimit: 50, candidatePool: 20 } } });
    // 400 memories, 5 of them in the rare project, none of which the query favours.
    const records = Array.from({ length: 400 }, (_, i) => ({
      userId: 'default',
      text: i % 80 === 0 ? `weekly report number ${i}` : `deploy checklist item ${i} for the release`,
      metadata: i % 80 === 0 ? { project: 'rare' } : { project: 'common' },
    }));
    for (const record of records) await service.addMemory(record);
    await service.indexesReady();
    const hits = (await app.inject({ method: 'GET', url: '/mem/search?q=deploy%20checklist%20release&limit=5&meta.project=rare' })).json();
    expect(hits).toHaveLength(5);
    expect(hits.every((hit: { metadata: { project: string } }) => hit.metadata.project === 'rare')).toBe(true);
    const tagged = (await app.inject({ method: 'GET', url: '/mem/search?q=deploy%20checklist%20release&limit=3&meta.project=common' })).json();
    expect(tagged).toHaveLength(3);
  });

  it('answers of /mem/search and /invoke search hold each distinct text once, the best copy with "duplicates"', async () => {
    const { app, service } = await build();
    const first = await add(app, { text: 'I moved to Berlin' });
    await add(app, { text: '  i moved   to BERLIN ' });
    const newest = await add(app, { text: 'I moved to Berlin' });
    const distinct = await add(app, { text: 'Berlin has many lakes' });
    const hits = (await app.inject({ method: 'GET', url: '/mem/search?q=moved%20to%20Berlin' })).json();
    const copies = hits.filter((hit: { text: string }) => hit.text.trim().toLowerCase().replace(/\s+/g, ' ') === 'i moved to berlin');
    expect(copies).toHaveLength(1);
    expect(copies[0].duplicates).toBe(2);
    // Identical texts score the same: the newest copy is the one answered.
    expect([newest.id, first.id]).toContain(copies[0].id);
    if (copies[0].text === 'I moved to Berlin') expect(copies[0].id).toBe(newest.id);
    expect(hits.find((hit: { id: string }) => hit.id === distinct.id)).not.toHaveProperty('duplicates');
    const invoked = (await app.inject(invokeCall({ action: 'search', query: 'moved to Berlin' }))).json();
    expect(invoked.map((hit: { id: string; duplicates?: number }) => [hit.id, hit.duplicates])).toEqual(hits.map((hit: { id: string; duplicates?: number }) => [hit.id, hit.duplicates]));
    // Nothing stored was removed, and the platform's /search is unchanged.
    expect((await app.inject({ method: 'GET', url: '/mem/list' })).json()).toHaveLength(4);
    expect(service.count).toBe(4);
    const limited = (await app.inject({ method: 'GET', url: '/mem/search?q=moved%20to%20Berlin&limit=2' })).json();
    expect(limited).toHaveLength(2);
  });

  it('/invoke update, history and get with history; metadata and filters on /invoke', async () => {
    const { app } = await build();
    const created = (await app.inject(invokeCall({ action: 'add', text: 'The deploy key is in the vault', metadata: { project: 'styx' } }))).json();
    expect(created.metadata).toEqual({ project: 'styx' });
    const updated = await app.inject(invokeCall({ action: 'update', id: created.id, text: 'The deploy key was rotated' }));
    expect(updated.statusCode, updated.body).toBe(200);
    expect(updated.json()).toMatchObject({ id: created.id, version: 2, text: 'The deploy key was rotated', metadata: { project: 'styx' } });
    expect((await app.inject(invokeCall({ action: 'history', id: created.id }))).json().versions.map((v: { text: string }) => v.text)).toEqual(['The deploy key is in the vault', 'The deploy key was rotated']);
    const withHistory = (await app.inject(invokeCall({ action: 'get', id: created.id, history: true }))).json();
    expect(withHistory.versions).toHaveLength(2);
    expect((await app.inject(invokeCall({ action: 'search', query: 'deploy key', filter: { project: 'styx' } }))).json()).toHaveLength(1);
    expect((await app.inject(invokeCall({ action: 'search', query: 'deploy key', filter: { project: 'other' } }))).json()).toEqual([]);
    expect((await app.inject(invokeCall({ action: 'list', filter: { project: 'styx' }, since: Date.parse(created.created_at) }))).json()).toHaveLength(1);
    for (const [params, status] of [[{ action: 'update', id: created.id }, 400], [{ action: 'update', id: 'nope', text: 'x' }, 404], [{ action: 'history' }, 400]] as const) {
      const response = await app.inject(invokeCall(params));
      expect(response.statusCode).toBe(status);
      expect(response.json().error).toBe(response.json().detail.reason);
    }
  });

  it('error bodies on /mem* and /invoke carry "error" (the tool clients read it); the platform routes stay as they were', async () => {
    const { app } = await build({ token: 'secret-token' });
    const auth = { authorization: 'Bearer secret-token' };
    const tool = [
      await app.inject({ method: 'GET', url: '/mem/missing', headers: auth }),
      await app.inject({ method: 'POST', url: '/mem', headers: auth, payload: { text: '' } }),
      await app.inject({ method: 'GET', url: '/mem/search' }),
      await app.inject({ method: 'POST', url: '/invoke', headers: auth, payload: { params: { action: 'fly' } } }),
      await app.inject({ method: 'GET', url: '/mem/a/b/c', headers: auth }),
    ];
    for (const response of tool) {
      expect(response.statusCode).toBeGreaterThanOrEqual(400);
      const body = response.json();
      expect(typeof body.detail.reason).toBe('string');
      expect(body.error).toBe(body.detail.reason);
    }
    const platform = [
      await app.inject({ method: 'POST', url: '/search', headers: auth, payload: { query: 'a', user_id: 'u', top_k: 0 } }),
      await app.inject({ method: 'POST', url: '/search', payload: {} }),
      await app.inject({ method: 'GET', url: '/nope', headers: auth }),
      await app.inject({ method: 'GET', url: '/memories', headers: auth }),
    ];
    for (const response of platform) expect(response.json()).not.toHaveProperty('error');
    expect(platform[1].json()).toEqual({ detail: { reason: expect.any(String) } });
  });
});

describe('memories that change, over a real server', () => {
  it('PATCH, history and the tool error body over HTTP', async () => {
    const { app } = await build();
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const call = async (method: string, url: string, body?: unknown) => {
      const response = await fetch(`${base}${url}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: response.status, body: await response.json() };
    };
    const created = await call('POST', '/mem', { text: 'The office is on floor two', metadata: { site: 'hq' } });
    expect(created.status).toBe(201);
    const updated = await call('PATCH', `/mem/${created.body.id}`, { text: 'The office moved to floor five' });
    expect(updated).toMatchObject({ status: 200, body: { id: created.body.id, version: 2, metadata: { site: 'hq' } } });
    const history = await call('GET', `/mem/${created.body.id}/history`);
    expect(history.body.versions.map((version: { text: string }) => version.text)).toEqual(['The office is on floor two', 'The office moved to floor five']);
    const hits = await call('GET', '/mem/search?q=office%20floor&meta.site=hq');
    expect(hits.body.map((hit: { text: string }) => hit.text)).toEqual(['The office moved to floor five']);
    const missing = await call('PATCH', '/mem/nope', { text: 'x' });
    expect(missing).toEqual({ status: 404, body: { detail: { reason: 'No memory with id "nope"' }, error: 'No memory with id "nope"' } });
  });
});

const invokeCall = (params: Record<string, unknown>) => ({
  method: 'POST' as const,
  url: '/invoke',
  ...json({ tool_id: 't1', tool: 'memorypool', invoked_by: 'agent', params }),
});
