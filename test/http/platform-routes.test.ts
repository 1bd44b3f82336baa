import { describe, expect, it } from 'vitest';
import { build } from '../support/helper.js';

const raw = (url: string, payload: string, headers: Record<string, string> = {}) => ({
  method: 'POST' as const,
  url,
  headers: { 'content-type': 'application/json', ...headers },
  payload,
});

const goodAdd = {
  request_id: 'req-1',
  user_id: 'conv-1',
  session_id: 'session-1',
  messages: [
    { role: 'Caroline', content: 'I went to the LGBTQ support group yesterday.', timestamp: 1683554160000 },
    { role: 'Melanie', content: 'That sounds inspiring! How did it go?', timestamp: 1683554160000 },
  ],
};

const goodSearch = { query: 'What did Caroline attend?', user_id: 'conv-1', top_k: 100 };

function withField(base: Record<string, unknown>, field: string, value: unknown): string {
  const body: Record<string, unknown> = { ...base };
  if (value === undefined) delete body[field];
  else body[field] = value;
  return JSON.stringify(body);
}

function withMessage(field: string, value: unknown): string {
  const message: Record<string, unknown> = { role: 'Caroline', content: 'hello', timestamp: 1704067200000 };
  if (value === undefined) delete message[field];
  else message[field] = value;
  return JSON.stringify({ ...goodAdd, messages: [message] });
}

describe('POST /add', () => {
  it('answers 200 with the three ids exactly as received, once searchable', async () => {
    const { app } = await build();
    const response = await app.inject(raw('/add', JSON.stringify(goodAdd)));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ success: true, request_id: 'req-1', user_id: 'conv-1', session_id: 'session-1' });
    const search = (await app.inject(raw('/search', JSON.stringify(goodSearch)))).json();
    expect(search.data.length).toBe(2);
    expect(search.data[0].content).toBe('[2023-05-08 13:56] Caroline: I went to the LGBTQ support group yesterday.');
  });

  const idRejections: Array<[string, unknown]> = [];
  for (const field of ['request_id', 'user_id', 'session_id']) {
    for (const value of [undefined, '', '  ', 5, null, true, ['a'], { a: 1 }]) idRejections.push([field, value]);
  }
  it.each(idRejections)('rejects %s = %j with 422', async (field, value) => {
    const { app, service } = await build();
    const response = await app.inject(raw('/add', withField(goodAdd, field, value)));
    expect(response.statusCode).toBe(422);
    const detail = response.json().detail;
    expect(Array.isArray(detail)).toBe(true);
    expect(detail.some((issue: { loc: unknown[] }) => issue.loc[0] === 'body' && issue.loc[1] === field)).toBe(true);
    for (const issue of detail) {
      expect(typeof issue.msg).toBe('string');
      expect(typeof issue.type).toBe('string');
    }
    expect(service.count).toBe(0);
  });

  it.each([undefined, [], {}, [1], ['a'], [null], 'x'])('rejects messages = %j with 422', async (value) => {
    const { app, service } = await build();
    const response = await app.inject(raw('/add', withField(goodAdd, 'messages', value)));
    expect(response.statusCode).toBe(422);
    expect(response.json().detail[0].loc.slice(0, 2)).toEqual(['body', 'messages']);
    expect(service.count).toBe(0);
  });

  it.each([
    ['role', undefined],
    ['role', ''],
    ['role', ' '],
    ['role', null],
    ['role', 1],
    ['role', true],
    ['content', undefined],
    ['content', ''],
    ['content', '  '],
    ['content', 7],
    ['content', null],
    ['timestamp', '1704067200000'],
    ['timestamp', 1704067200000.7],
    ['timestamp', true],
    ['timestamp', 1e300],
  ])('rejects messages[0].%s = %j with 422', async (field, value) => {
    const { app, service } = await build();
    const response = await app.inject(raw('/add', withMessage(field, value)));
    expect(response.statusCode).toBe(422);
    expect(response.json().detail[0].loc).toEqual(['body', 'messages', 0, field]);
    expect(service.count).toBe(0);
  });

  it('answers each distinct text once (the best copy), with the fields it always had', async () => {
    const { app } = await build();
    const turns = (requestId: string, session: string, timestamp: number) => ({
      request_id: requestId,
      user_id: 'conv-dup',
      session_id: session,
      messages: [
        { role: 'Caroline', content: 'Thanks, see you soon!', timestamp },
        { role: 'Caroline', content: 'I adopted a puppy called Biscuit.', timestamp: timestamp + 1000 },
      ],
    });
    for (const [requestId, session, timestamp] of [['a', 's1', 1683554160000], ['b', 's2', 1683640560000], ['c', 's3', 1683726960000]] as const) {
      expect((await app.inject({ method: 'POST', url: '/add', payload: turns(requestId, session, timestamp) })).statusCode).toBe(200);
    }
    const { data } = (await app.inject({ method: 'POST', url: '/search', payload: { query: 'see you soon Caroline', user_id: 'conv-dup', top_k: 10 } })).json();
    // Each turn's content carries its own date, but the stored texts are the same: one hit per text.
    expect(data).toHaveLength(2);
    expect(data.map((hit: { content: string }) => hit.content.replace(/^\[[^\]]+\] /, '')).sort()).toEqual(['Caroline: I adopted a puppy called Biscuit.', 'Caroline: Thanks, see you soon!']);
    for (const hit of data) expect(Object.keys(hit).sort()).toEqual(['content', 'created_at', 'id', 'score']);
  });

  it('accepts any role (speaker names), a missing timestamp and a lossless float timestamp', async () => {
    const { app } = await build();
    const body = `{"request_id":"r","user_id":"u","session_id":"s","messages":[{"role":"Dr. Ada Lovelace","content":"a","timestamp":1704067200000.0},{"role":"user","content":"b"}]}`;
    const response = await app.inject(raw('/add', body));
    expect(response.statusCode).toBe(200);
    const data = (await app.inject(raw('/search', JSON.stringify({ query: 'a', user_id: 'u', top_k: 10 })))).json().data;
    const first = data.find((hit: { content: string }) => hit.content.includes('Ada'));
    expect(first.content).toBe('[2024-01-01 00:00] Dr. Ada Lovelace: a');
    expect(first.created_at).toBe('2024-01-01T00:00:00.000Z');
  });

  it('ignores undeclared fields at the top level and inside messages', async () => {
    const { app } = await build();
    const body = {
      ...goodAdd,
      metadata: { a: 1 },
      app_id: 'x',
      agent_id: 'y',
      async_mode: true,
      messages: goodAdd.messages.map((message) => ({ ...message, name: 'n', metadata: {} })),
    };
    const response = await app.inject(raw('/add', JSON.stringify(body)));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ success: true, request_id: 'req-1', user_id: 'conv-1', session_id: 'session-1' });
  });

  it('lists every problem at once', async () => {
    const { app } = await build();
    const response = await app.inject(raw('/add', JSON.stringify({ request_id: '', messages: [] })));
    expect(response.statusCode).toBe(422);
    const locs = response.json().detail.map((issue: { loc: unknown[] }) => issue.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.request_id', 'body.user_id', 'body.session_id', 'body.messages']));
  });
});

describe('POST /search', () => {
  it.each([
    ['query', undefined],
    ['query', ''],
    ['query', 5],
    ['user_id', undefined],
    ['user_id', ''],
    ['top_k', undefined],
    ['top_k', null],
    ['top_k', '100'],
    ['top_k', 10.5],
    ['top_k', true],
    ['top_k', [100]],
    ['top_k', -1],
    ['top_k', 0],
    ['options', [1, 2]],
    ['options', 'A'],
  ])('rejects %s = %j with 422', async (field, value) => {
    const { app } = await build();
    const response = await app.inject(raw('/search', withField(goodSearch, field, value)));
    expect(response.statusCode).toBe(422);
    expect(response.json().detail.some((issue: { loc: unknown[] }) => issue.loc[1] === field)).toBe(true);
  });

  it('rejects top_k written as 100.0 or 1e2, though JSON.parse would see 100', async () => {
    const { app } = await build();
    for (const literal of ['100.0', '1e2', '1.0E2']) {
      const response = await app.inject(raw('/search', `{"query":"q","user_id":"u","top_k":${literal}}`));
      expect(response.statusCode).toBe(422);
      expect(response.json().detail[0].loc).toEqual(['body', 'top_k']);
    }
    expect((await app.inject(raw('/search', '{"query":"q","user_id":"u","top_k":100}'))).statusCode).toBe(200);
  });

  it('clamps top_k above the maximum instead of rejecting it', async () => {
    const { app } = await build({ topKMax: 3 });
    const messages = Array.from({ length: 6 }, (_, i) => ({ role: 'A', content: `fact number ${i}` }));
    await app.inject(raw('/add', JSON.stringify({ request_id: 'r', user_id: 'u', session_id: 's', messages })));
    const response = await app.inject(raw('/search', JSON.stringify({ query: 'fact', user_id: 'u', top_k: 1000 })));
    expect(response.statusCode).toBe(200);
    expect(response.json().data).toHaveLength(3);
  });

  it('returns [] for an unknown user and accepts options and undeclared fields', async () => {
    const { app } = await build();
    const response = await app.inject(raw('/search', JSON.stringify({ ...goodSearch, user_id: 'nobody', options: ['A', 'B'], filters: {}, rerank: true, keyword_search: true })));
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ data: [] });
  });

  it('answers sorted data of the documented shape, at most top_k, only the user\'s own', async () => {
    const { app } = await build();
    await app.inject(raw('/add', JSON.stringify(goodAdd)));
    await app.inject(raw('/add', JSON.stringify({ ...goodAdd, user_id: 'conv-2', messages: [{ role: 'Caroline', content: 'support group for another user' }] })));
    const { data } = (await app.inject(raw('/search', JSON.stringify({ ...goodSearch, top_k: 1 })))).json();
    expect(data).toHaveLength(1);
    const all = (await app.inject(raw('/search', JSON.stringify(goodSearch)))).json().data;
    expect(all).toHaveLength(2);
    for (const hit of all) {
      expect(Object.keys(hit).sort()).toEqual(['content', 'created_at', 'id', 'score']);
      expect(hit.id).toMatch(/\S/);
      expect(hit.content).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d\] \S/);
      expect(new Date(hit.created_at).toISOString()).toBe(hit.created_at);
      expect(hit.content).not.toContain('another user');
    }
    expect(all[0].score).toBeGreaterThanOrEqual(all[1].score);
  });

  it('malformed JSON, NaN and Infinity are a 400 with the error body', async () => {
    const { app } = await build();
    for (const payload of ['{', '{"query":"q","user_id":"u","top_k":NaN}', '{"query":"q","user_id":"u","top_k":Infinity}', '\u0000']) {
      const response = await app.inject(raw('/search', payload));
      expect(response.statusCode, payload).toBe(400);
      expect(response.json().detail.reason).toMatch(/^Request body is not valid JSON: /);
    }
  });

  it('a number past the double range is valid JSON: a 422 listing every problem, top_k\'s exponent among them', async () => {
    const { app } = await build();
    const response = await app.inject(raw('/search', '{"top_k":1e999}'));
    expect(response.statusCode).toBe(422);
    expect(response.json().detail.map((issue: { loc: unknown[]; type: string }) => [issue.loc.join('.'), issue.type])).toEqual([
      ['body.query', 'missing'],
      ['body.user_id', 'missing'],
      ['body.top_k', 'int_type'],
    ]);
  });
});

describe('idempotency on (request_id, user_id)', () => {
  it('stores a repeat once; the first body wins; another user is another write', async () => {
    const { app, service } = await build();
    expect((await app.inject(raw('/add', JSON.stringify(goodAdd)))).statusCode).toBe(200);
    const repeat = await app.inject(raw('/add', JSON.stringify(goodAdd)));
    expect(repeat.statusCode).toBe(200);
    expect(repeat.json()).toEqual({ success: true, request_id: 'req-1', user_id: 'conv-1', session_id: 'session-1' });
    expect(service.count).toBe(2);

    const different = await app.inject(raw('/add', JSON.stringify({ ...goodAdd, messages: [{ role: 'X', content: 'a different body' }] })));
    expect(different.statusCode).toBe(200);
    expect(service.count).toBe(2);
    const contents = (await app.inject(raw('/search', JSON.stringify({ ...goodSearch, query: 'different body' })))).json().data.map((hit: { content: string }) => hit.content);
    expect(contents.join('\n')).not.toContain('different body');

    expect((await app.inject(raw('/add', JSON.stringify({ ...goodAdd, user_id: 'conv-9' })))).statusCode).toBe(200);
    expect(service.count).toBe(4);
  });

  it('holds under racing duplicates', async () => {
    const { app, service } = await build();
    const responses = await Promise.all(Array.from({ length: 8 }, () => app.inject(raw('/add', JSON.stringify(goodAdd)))));
    expect(responses.map((response) => response.statusCode)).toEqual(Array(8).fill(200));
    expect(service.count).toBe(2);
  });

  it('holds across a restart', async () => {
    const first = await build();
    await first.app.inject(raw('/add', JSON.stringify(goodAdd)));
    await first.app.close();
    await first.service.close();
    const second = await build({ dataDir: first.dataDir });
    expect(await second.service.memoryCount()).toBe(2);
    expect((await second.app.inject(raw('/add', JSON.stringify(goodAdd)))).statusCode).toBe(200);
    expect(await second.service.memoryCount()).toBe(2);
  });
});

describe('DELETE /users/{user_id}', () => {
  it('removes everything stored for the user and nothing else', async () => {
    const { app, service } = await build({ token: 'tok-12345' });
    const auth = { authorization: 'Bearer tok-12345' };
    await app.inject(raw('/add', JSON.stringify(goodAdd), auth));
    await app.inject(raw('/add', JSON.stringify({ ...goodAdd, user_id: 'keep' }), auth));
    const response = await app.inject({ method: 'DELETE', url: '/users/conv-1', headers: auth });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ deleted_user: 'conv-1', deleted: 2 });
    expect((await app.inject(raw('/search', JSON.stringify(goodSearch), auth))).json()).toEqual({ data: [] });
    expect(service.count).toBe(2);
    // The request id is free again: the user's data is gone for good.
    await app.inject(raw('/add', JSON.stringify(goodAdd), auth));
    expect(service.count).toBe(4);
  });
});
