import fc from 'fast-check';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { build, openService } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';

/**
 * Thousands of generated requests (random JSON, mutated valid bodies, broken text, raw bytes,
 * odd query strings and ids) at every route that takes input: never a 5xx, every error in the
 * error body's shape, and the store written meanwhile loads whole afterwards. On both stores:
 * the JSONL data directory and PostgreSQL.
 */

const USERS = ['fuzz-a', 'fuzz-b', 'default'];
const DELETE = Symbol('delete');

const userId = fc.oneof(fc.constantFrom(...USERS), fc.string({ maxLength: 8 }));
const word = fc.constantFrom('garden', 'violin', 'May', '2023', 'last week', 'Caroline', 'ünïcødé', '😀', 'שלום', '\u0000', '\uFDD0', '\ud800', '');
const text = fc.oneof(
  { arbitrary: fc.array(word, { minLength: 1, maxLength: 6 }).map((words) => words.join(' ')), weight: 4 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 20 }), weight: 1 },
);
const timestamp = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 2_000_000_000_000 }), weight: 4 },
  { arbitrary: fc.oneof(fc.double(), fc.constantFrom(1_704_067_200_000.0, -1, 8.64e15, 9e15, null)), weight: 1 },
);

const validBodies = {
  '/add': fc.record({
    request_id: fc.oneof(fc.constantFrom('r1', 'r2', 'r3'), fc.string({ maxLength: 6 })),
    user_id: userId,
    session_id: fc.constantFrom('s1', 's2'),
    messages: fc.array(fc.record({ role: fc.constantFrom('Caroline', 'Melanie', 'user'), content: text, timestamp }, { requiredKeys: ['role', 'content'] }), { minLength: 1, maxLength: 4 }),
  }),
  '/search': fc.record({ query: text, user_id: userId, top_k: fc.oneof(fc.integer({ min: -2, max: 300 }), fc.constant(100)), options: fc.array(text, { maxLength: 3 }) }, { requiredKeys: ['query', 'user_id', 'top_k'] }),
  '/mem': fc.record({ text, user_id: userId, tags: fc.array(word, { maxLength: 3 }), importance: fc.oneof({ arbitrary: fc.double({ min: 0, max: 1, noNaN: true }), weight: 3 }, { arbitrary: fc.double(), weight: 1 }), source: word }, { requiredKeys: ['text'] }),
  '/invoke': fc.record({
    tool: fc.constantFrom('memorypool', 'search', 'add'),
    params: fc.record(
      {
        action: fc.constantFrom('add', 'search', 'list', 'get', 'delete', 'stats', 'ADD', ' Search ', 'nope'),
        user_id: userId,
        text,
        query: text,
        q: text,
        id: fc.string({ maxLength: 8 }),
        limit: fc.oneof(fc.integer({ min: -5, max: 2000 }), fc.constantFrom('10', ' 3 ', '1.5', 'x')),
        tag: word,
        tags: fc.array(word, { maxLength: 3 }),
      },
      { requiredKeys: ['action'] },
    ),
  }),
};
type Route = keyof typeof validBodies;
const ROUTES = Object.keys(validBodies) as Route[];

/** Every path to a value inside a JSON value (objects and arrays), the root excluded. */
function paths(value: unknown, prefix: Array<string | number> = []): Array<Array<string | number>> {
  if (typeof value !== 'object' || value === null) return [];
  const entries: Array<[string | number, unknown]> = Array.isArray(value) ? value.map((item, i) => [i, item]) : Object.entries(value);
  return entries.flatMap(([key, child]) => [[...prefix, key], ...paths(child, [...prefix, key])]);
}

function mutate(body: unknown, edits: Array<{ at: number; value: unknown }>): unknown {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  for (const edit of edits) {
    const all = paths(copy);
    if (all.length === 0) break;
    const target = all[edit.at % all.length];
    const parent = target.slice(0, -1).reduce<any>((node, key) => node[key], copy);
    const key = target[target.length - 1];
    if (edit.value === DELETE) {
      if (Array.isArray(parent)) parent.splice(key as number, 1);
      else delete parent[key];
    } else {
      parent[key] = edit.value;
    }
  }
  return copy;
}

const edits = fc.array(fc.record({ at: fc.nat(), value: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constant(DELETE), fc.constantFrom('', ' ', 0, -1, 1.5, true, null, [], {})) }), { minLength: 1, maxLength: 3 });

/** A body for a POST route, as text or bytes, in one of several hostile flavours. */
const postRequest = fc.constantFrom(...ROUTES).chain((route) =>
  fc.record({
    route: fc.constant(route),
    contentType: fc.constantFrom('application/json', 'text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=latin1', undefined),
    payload: fc.oneof(
      { arbitrary: validBodies[route].map((body) => JSON.stringify(body)), weight: 4 },
      { arbitrary: fc.tuple(validBodies[route], edits).map(([body, changes]) => JSON.stringify(mutate(body, changes))), weight: 3 },
      fc.tuple(validBodies[route], fc.nat(), fc.nat({ max: 3 }), fc.string({ unit: 'binary', maxLength: 3 })).map(([body, at, cut, insert]) => {
        const json = JSON.stringify(body);
        const position = at % (json.length + 1);
        return json.slice(0, position) + insert + json.slice(position + cut);
      }),
      fc.jsonValue({ maxDepth: 4 }).map((value) => JSON.stringify(value)),
      fc.json({ maxDepth: 3 }),
      fc.string({ unit: 'binary', maxLength: 60 }),
      fc.constantFrom('', 'null', '[]', '{}', '"x"', 'NaN', '{"top_k": Infinity}', '{"a":1e999}', '\ufeff{}', '{"__proto__": {"polluted": 1}}', '{"constructor": {"prototype": {"x": 1}}}'),
      fc.uint8Array({ maxLength: 80 }).map((bytes) => Buffer.from(bytes)),
    ),
  }),
);

const queryValue = fc.oneof(text, fc.constantFrom('0', '-1', '1.5', '1000000', '10', ' 5 ', ''), fc.array(fc.string({ maxLength: 4 }), { minLength: 2, maxLength: 3 }));
const query = fc.dictionary(fc.constantFrom('query', 'q', 'user_id', 'limit', 'tag', 'id', '__proto__', 'x'), queryValue, { maxKeys: 4 });

/** GET and DELETE requests: query strings and path ids (random, hostile, or of stored memories). */
const otherRequest = (knownIds: string[]) => fc.oneof(
  { arbitrary: fc.record({ method: fc.constant('GET' as const), path: fc.constantFrom('/mem/search', '/mem/list', '/mem/stats'), query }), weight: 3 },
  { arbitrary: fc.record({ method: fc.constantFrom('GET' as const, 'DELETE' as const), path: fc.oneof(fc.string({ unit: 'binary', maxLength: 12 }), fc.constantFrom('..', '%2e%2e', '%00', 'stats', 'search', ...knownIds)).map((id) => `/mem/${encodeURIComponent(id)}`), query }), weight: 3 },
  { arbitrary: fc.record({ method: fc.constantFrom('GET' as const, 'DELETE' as const), path: fc.constantFrom('%FF', '%E2%82', '%', '%%32', 'x'.repeat(2049)).map((raw) => `/mem/${raw}`), query }), weight: 1 },
  { arbitrary: fc.record({ method: fc.constant('POST' as const), path: fc.constant('/mem'), query }), weight: 1 },
  { arbitrary: fc.record({ method: fc.constant('DELETE' as const), path: fc.string({ unit: 'binary', maxLength: 10 }).map((id) => `/users/${encodeURIComponent(`fuzz-gone-${id}`)}`), query: fc.constant({}) }), weight: 1 },
);

function expectWellFormed(response: { statusCode: number; body: string; headers: Record<string, unknown> }, label: string): void {
  expect(response.statusCode, `${label} → ${response.statusCode} ${response.body.slice(0, 300)}`).toBeLessThan(500);
  const body = JSON.parse(response.body);
  if (response.statusCode >= 400) {
    expect(body.detail, label).toBeDefined();
    if (response.statusCode === 422) expect(Array.isArray(body.detail), label).toBe(true);
    else expect(typeof body.detail.reason, label).toBe('string');
  }
}

const stores: Array<[string, () => Promise<{ dataDir?: string; databaseUrl?: string }>]> = [
  ['jsonl', async () => ({})],
  ['postgres', async () => ({ databaseUrl: await freshDatabase() })],
];

describe.each(stores)('fuzzing every route that takes input: %s', (_name, where) => {
  it('1500 generated requests: no 5xx, errors in the error body, and the store loads whole afterwards', async () => {
    const { databaseUrl } = await where();
    const { app, service, dataDir } = await build({ service: { databaseUrl } });
    // Some memories to find, get and delete.
    for (const user of USERS) {
      await service.addConversation({ requestId: 'seed', userId: user, sessionId: 's1', messages: [{ role: 'Caroline', content: 'I planted violets in the garden last May.' }] });
    }
    const knownIds = (await Promise.all(USERS.map((user) => service.list({ userId: user, limit: 10 })))).flat().map((memory) => memory.id);
    const budget = { interruptAfterTimeLimit: 25_000, markInterruptAsFailure: true };

    await fc.assert(
      fc.asyncProperty(postRequest, async ({ route, contentType, payload }) => {
        const response = await app.inject({ method: 'POST', url: route, payload, headers: contentType ? { 'content-type': contentType } : {} });
        expectWellFormed(response, `POST ${route} ${JSON.stringify(String(payload).slice(0, 200))}`);
      }),
      { numRuns: 1000, ...budget },
    );

    await fc.assert(
      fc.asyncProperty(otherRequest(knownIds), async ({ method, path, query: params }) => {
        const response = await app.inject({ method, url: path, query: params as Record<string, string | string[]> });
        expectWellFormed(response, `${method} ${path} ${JSON.stringify(params)}`);
      }),
      { numRuns: 500, ...budget },
    );

    const before = await service.stats();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await app.close();
    await service.close();

    const warnings: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line)) });
    const reopened = await openService({ dataDir, databaseUrl, logger });
    await reopened.indexesReady();
    const after = await reopened.stats();
    expect(warnings).toEqual([]);
    expect(after.count).toBe(before.count);
    expect(after.per_user.map((entry) => [entry.user_id, entry.count])).toEqual(before.per_user.map((entry) => [entry.user_id, entry.count]));
    // Each user's index holds every memory: its graph, for a user past the exhaustive limit; a smaller one keeps none.
    for (const entry of after.per_user) expect(entry.index).toMatchObject({ complete: true, vectors: entry.index.graph ? entry.count : 0 });
  });
});
