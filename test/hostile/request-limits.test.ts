import { describe, expect, it } from 'vitest';
import type { Embedder, EmbedOptions } from '../../src/embedding/embedder.js';
import { MAX_ADD_CHARS, MAX_ADD_MESSAGES, MAX_MESSAGE_CHARS, MAX_SEARCH_BODY_BYTES, MAX_SEARCH_OPTIONS } from '../../src/protocol/request-limits.js';
import { boundQueryText, MAX_QUERY_CHARS } from '../../src/memory/query-bounds.js';
import { build, testEmbedder } from '../support/helper.js';

/** The bounds on the work one request can cause (src/protocol/request-limits.ts, src/memory/query-bounds.ts). */

const USER = 'bounded-user';

function post(url: string, payload: unknown) {
  return { method: 'POST' as const, url, payload: typeof payload === 'string' ? payload : JSON.stringify(payload), headers: { 'content-type': 'application/json' } };
}

const add = (messages: Array<{ role: string; content: string }>, requestId = 'r1') => ({ request_id: requestId, user_id: USER, session_id: 's1', messages });

/** The hash test embedder, recording every text it is asked to encode. */
function recordingEmbedder(): Embedder & { texts: string[] } {
  const inner = testEmbedder();
  const texts: string[] = [];
  return {
    texts,
    modelId: inner.modelId,
    dimensions: inner.dimensions,
    ready: () => inner.ready(),
    close: () => inner.close(),
    embed(batch: readonly string[], options?: EmbedOptions) {
      texts.push(...batch);
      return inner.embed(batch, options);
    },
  };
}

async function seeded(options: { topKMax?: number; embedder?: Embedder } = {}) {
  const built = await build({ topKMax: options.topKMax, service: options.embedder ? { embedder: options.embedder } : {} });
  const messages = ['I adopted a greyhound called Pixel.', 'Pixel loves the beach.', 'We walk Pixel every morning.', 'My sister has a cat.', 'The greyhound is two years old.'];
  const response = await built.app.inject(post('/add', add(messages.map((content) => ({ role: 'Caroline', content })))));
  expect(response.statusCode).toBe(200);
  return built;
}

describe('top_k written as a huge integer literal', () => {
  const huge = `1${'0'.repeat(400)}`;

  it.each([
    ['1 followed by 400 zeros', huge],
    ['10^19 (past 2^53)', '10000000000000000000'],
    ['2^53 + 1', '9007199254740993'],
  ])('%s is clamped to top_k_max: a 200 with at most top_k_max results', async (_name, literal) => {
    const { app } = await seeded({ topKMax: 3 });
    const response = await app.inject(post('/search', `{"query":"greyhound","user_id":"${USER}","top_k":${literal}}`));
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data).toHaveLength(3);
  });

  it.each([
    ['a huge negative integer', `-${huge}`, 'greater_than_equal'],
    ['a huge fractional literal', `${huge}.5`, 'int_type'],
    ['a huge exponent', '1e400', 'int_type'],
    ['an ordinary fraction', '100.5', 'int_type'],
  ])('%s stays a 422 naming top_k', async (_name, literal, type) => {
    const { app } = await seeded();
    const response = await app.inject(post('/search', `{"query":"greyhound","user_id":"${USER}","top_k":${literal}}`));
    expect(response.statusCode, response.body).toBe(422);
    const issues = response.json().detail as Array<{ loc: unknown[]; type: string }>;
    expect(issues.some((issue) => issue.loc.join('.') === 'body.top_k' && issue.type === type), response.body).toBe(true);
  });

  it('a timestamp written past the double range is a 422 (out of range), not a 400', async () => {
    const { app, service } = await build();
    const response = await app.inject(post('/add', `{"request_id":"r","user_id":"${USER}","session_id":"s","messages":[{"role":"a","content":"b","timestamp":${huge}}]}`));
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json().detail[0].loc).toEqual(['body', 'messages', 0, 'timestamp']);
    expect(service.count).toBe(0);
  });
});

describe('options', () => {
  it(`up to ${MAX_SEARCH_OPTIONS} are searched`, async () => {
    const { app } = await seeded();
    const options = Array.from({ length: MAX_SEARCH_OPTIONS }, (_, i) => `option ${i} about Pixel`);
    const response = await app.inject(post('/search', { query: 'greyhound', user_id: USER, top_k: 5, options }));
    expect(response.statusCode, response.body).toBe(200);
    expect(response.json().data.length).toBeGreaterThan(0);
  });

  it.each([MAX_SEARCH_OPTIONS + 1, 5_000])('%i are a 422 naming the limit, and nothing is encoded', async (count) => {
    const embedder = recordingEmbedder();
    const { app } = await seeded({ embedder });
    const encodedBefore = embedder.texts.length;
    const options = Array.from({ length: count }, (_, i) => `option ${i}`);
    const response = await app.inject(post('/search', { query: 'greyhound', user_id: USER, top_k: 5, options }));
    expect(response.statusCode, response.body).toBe(422);
    expect(response.json().detail).toEqual([
      { loc: ['body', 'options'], msg: `List should have at most ${MAX_SEARCH_OPTIONS} items after validation, not ${count}`, type: 'too_long' },
    ]);
    expect(embedder.texts.length).toBe(encodedBefore);
  });
});

describe('query length', () => {
  it('boundQueryText keeps short texts whole and cuts long ones at a space, within the limit', () => {
    expect(boundQueryText('what is the dog called?')).toBe('what is the dog called?');
    const long = 'greyhound '.repeat(1_000);
    const bounded = boundQueryText(long);
    expect(bounded.length).toBeLessThanOrEqual(MAX_QUERY_CHARS);
    expect(bounded.length).toBeGreaterThan(MAX_QUERY_CHARS - 64);
    expect(long.startsWith(bounded)).toBe(true);
    expect(bounded.endsWith('greyhound')).toBe(true);
    // One long word: cut at the limit, never inside a surrogate pair.
    const emoji = '😀'.repeat(MAX_QUERY_CHARS);
    const cut = boundQueryText(emoji);
    expect(cut.length).toBeLessThanOrEqual(MAX_QUERY_CHARS);
    expect(cut).toBe('😀'.repeat(cut.length / 2));
  });

  it('a 1.9 MB query and long options are answered, and only their first MAX_QUERY_CHARS reach the encoder', async () => {
    const embedder = recordingEmbedder();
    const { app } = await seeded({ embedder });
    const encodedBefore = embedder.texts.length;
    const query = `greyhound ${'x'.repeat(1_900_000)}`;
    const options = ['pixel '.repeat(5_000), 'beach'];
    const response = await app.inject(post('/search', { query, user_id: USER, top_k: 5, options }));
    expect(response.statusCode).toBe(200);
    expect(response.json().data.length).toBeGreaterThan(0);
    const encoded = embedder.texts.slice(encodedBefore);
    expect(encoded).toHaveLength(3);
    for (const text of encoded) expect(text.length).toBeLessThanOrEqual(MAX_QUERY_CHARS);
    expect(encoded[0].startsWith('greyhound')).toBe(true);
  });

  it(`a Search body over ${MAX_SEARCH_BODY_BYTES} bytes (a 7 MB query) is a 413 and nothing is encoded; /invoke reads the same query to the bound`, async () => {
    const embedder = recordingEmbedder();
    const { app } = await seeded({ embedder });
    const encodedBefore = embedder.texts.length;
    const query = `greyhound ${'x'.repeat(7 * 1024 * 1024)}`;
    const search = await app.inject(post('/search', { query, user_id: USER, top_k: 5 }));
    expect(search.statusCode).toBe(413);
    expect(search.json().detail.reason).toMatch(/too large/i);
    expect(embedder.texts.length).toBe(encodedBefore);
    const invoke = await app.inject(post('/invoke', { params: { action: 'search', query, user_id: USER } }));
    expect(invoke.statusCode).toBe(200);
    expect(embedder.texts.slice(encodedBefore).map((text) => text.length <= MAX_QUERY_CHARS)).toEqual([true]);
  });

  it('a configured body limit below the Search bound still holds on /search', async () => {
    const { app } = await build({ bodyLimit: 4096 });
    expect((await app.inject(post('/search', { query: 'q'.repeat(5_000), user_id: USER, top_k: 5 }))).statusCode).toBe(413);
  });

  it('words past the limit do not change the answer (they are not analysed)', async () => {
    const { app } = await seeded();
    const head = 'walk '.repeat(MAX_QUERY_CHARS / 5);
    const search = async (query: string) => (await app.inject(post('/search', { query, user_id: USER, top_k: 5 }))).json().data;
    expect(await search(`${head} greyhound beach sister cat`)).toEqual(await search(head));
  });
});

describe('Add size', () => {
  it(`a message of ${MAX_MESSAGE_CHARS} characters is stored whole`, async () => {
    const { app, service } = await build();
    const content = Array.from({ length: MAX_MESSAGE_CHARS }, (_, i) => (i % 8 === 7 ? ' ' : 'a')).join('');
    const response = await app.inject(post('/add', add([{ role: 'Caroline', content }])));
    expect(response.statusCode, response.body.slice(0, 300)).toBe(200);
    const units = await service.list({ userId: USER, limit: 10_000 });
    expect(units.sort((a, b) => a.part! - b.part!).map((unit) => unit.text).join(' ')).toBe(content.trim());
  });

  it('a message one character over is a 422 naming the message', async () => {
    const { app, service } = await build();
    const response = await app.inject(post('/add', add([{ role: 'a', content: 'ok' }, { role: 'b', content: 'x'.repeat(MAX_MESSAGE_CHARS + 1) }])));
    expect(response.statusCode).toBe(422);
    expect(response.json().detail).toEqual([{ loc: ['body', 'messages', 1, 'content'], msg: `String should have at most ${MAX_MESSAGE_CHARS} characters`, type: 'string_too_long' }]);
    expect(service.count).toBe(0);
  });

  it('a 1 MB message is a 422, and nothing is encoded', async () => {
    const embedder = recordingEmbedder();
    const { app, service } = await build({ service: { embedder } });
    const response = await app.inject(post('/add', add([{ role: 'a', content: 'word '.repeat(200_000) }])));
    expect(response.statusCode).toBe(422);
    expect(embedder.texts).toHaveLength(0);
    expect(service.count).toBe(0);
  });

  it(`more than ${MAX_ADD_MESSAGES} messages, or more than ${MAX_ADD_CHARS} characters in all, are a 422 naming messages`, async () => {
    const { app, service } = await build();
    const many = Array.from({ length: MAX_ADD_MESSAGES + 1 }, (_, i) => ({ role: 'a', content: `message ${i}` }));
    const tooMany = await app.inject(post('/add', add(many)));
    expect(tooMany.statusCode).toBe(422);
    expect(tooMany.json().detail).toEqual([{ loc: ['body', 'messages'], msg: `List should have at most ${MAX_ADD_MESSAGES} items after validation, not ${MAX_ADD_MESSAGES + 1}`, type: 'too_long' }]);

    const third = Math.floor(MAX_ADD_CHARS / 3) + 1;
    const long = [0, 1, 2].map(() => ({ role: 'a', content: 'y'.repeat(third) }));
    const tooLong = await app.inject(post('/add', add(long)));
    expect(tooLong.statusCode).toBe(422);
    expect(tooLong.json().detail).toEqual([{ loc: ['body', 'messages'], msg: `The messages' content should total at most ${MAX_ADD_CHARS} characters`, type: 'too_long' }]);

    // A content of the wrong type next to long ones is reported as such (the total is not computed over it).
    const mixed = await app.inject(post('/add', add([...long, { role: 'a', content: 5 as unknown as string }])));
    expect(mixed.statusCode).toBe(422);
    expect(mixed.json().detail[0].loc).toEqual(['body', 'messages', 3, 'content']);

    expect(service.count).toBe(0);
    const atLimit = await app.inject(post('/add', add(Array.from({ length: MAX_ADD_MESSAGES }, (_, i) => ({ role: 'a', content: `message ${i}` })))));
    expect(atLimit.statusCode).toBe(200);
  });
});

describe('MemoryPool memory text', () => {
  it('a text over 200,000 characters is a 400 on /mem and /invoke, and nothing is stored', async () => {
    const { app, service } = await build();
    const text = 'z'.repeat(200_001);
    const mem = await app.inject(post('/mem', { text, user_id: USER }));
    expect(mem.statusCode).toBe(400);
    expect(mem.json().detail.reason).toBe('text: text must be at most 200000 characters');
    const invoke = await app.inject(post('/invoke', { params: { action: 'add', text, user_id: USER } }));
    expect(invoke.statusCode).toBe(400);
    expect(service.count).toBe(0);
    expect((await app.inject(post('/mem', { text: text.slice(1), user_id: USER }))).statusCode).toBe(201);
  });
});
