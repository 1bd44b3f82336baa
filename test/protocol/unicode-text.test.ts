import { describe, expect, it } from 'vitest';
import { findLoneSurrogate } from '../../src/protocol/unicode-text.js';
import { build } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';

const LONE = '\ud800';
const json = { 'content-type': 'application/json' };
const mcpHeaders = { ...json, accept: 'application/json, text/event-stream' };

describe('finding text that is not valid Unicode', () => {
  it('finds a lone surrogate in any value or key, and passes pairs, NUL and noncharacters', () => {
    expect(findLoneSurrogate({ a: ['ok 😀', { b: `x${LONE}` }] })).toEqual({ path: ['a', 1, 'b'], index: 1 });
    expect(findLoneSurrogate({ [`k\udc00`]: 1 })).toEqual({ path: ['k\udc00'], index: 1 });
    expect(findLoneSurrogate('😀'.slice(1))).toEqual({ path: [], index: 0 });
    expect(findLoneSurrogate({ text: 'NUL \u0000, \uFDD0, \uFFFF, 😀', n: 1, t: true, z: null })).toBeNull();
  });

  it('walks a body nested far deeper than the call stack would allow', () => {
    let deep: unknown = LONE;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(findLoneSurrogate(deep)?.path).toEqual(new Array(200_000).fill(0));
  });
});

const stores: Array<[string, () => Promise<string | undefined>]> = [
  ['jsonl', async () => undefined],
  ['postgres', () => freshDatabase()],
];

describe.each(stores)('a lone surrogate at every door: %s', (_name, databaseUrl) => {
  it("is refused with the door's client error, naming where it is, and nothing is stored", async () => {
    const { app, service } = await build({ service: { databaseUrl: await databaseUrl() } });
    const add = await app.inject({ method: 'POST', url: '/add', headers: json, payload: JSON.stringify({ request_id: 'r', user_id: 'u', session_id: 's', messages: [{ role: 'user', content: `hi ${LONE}` }] }) });
    expect(add.statusCode).toBe(422);
    expect(add.json().detail).toEqual([{ loc: ['body', 'messages', 0, 'content'], msg: 'String must be valid Unicode text: a lone surrogate at character 3', type: 'string_unicode' }]);
    const search = await app.inject({ method: 'POST', url: '/search', headers: json, payload: JSON.stringify({ query: LONE, user_id: 'u', top_k: 5 }) });
    expect(search.statusCode).toBe(422);
    expect(search.json().detail[0].loc).toEqual(['body', 'query']);

    const mem = await app.inject({ method: 'POST', url: '/mem', headers: json, payload: JSON.stringify({ text: 'fine', metadata: { [`key${LONE}`]: 'v' } }) });
    expect(mem.statusCode).toBe(400);
    expect(mem.json().detail.reason).toBe(`metadata.key${LONE}: must be valid Unicode text: a lone surrogate at character 3`);
    const invoked = await app.inject({ method: 'POST', url: '/invoke', headers: json, payload: JSON.stringify({ params: { action: 'add', text: `a${LONE}` } }) });
    expect(invoked.statusCode).toBe(400);
    expect(invoked.json().detail.reason).toBe('params.text: must be valid Unicode text: a lone surrogate at character 1');

    const call = await app.inject({ method: 'POST', url: '/mcp', headers: mcpHeaders, payload: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'remember', arguments: { text: `a${LONE}`, user_id: 'u' } } }) });
    expect(call.statusCode).toBe(200);
    expect(call.json().result).toEqual({ isError: true, content: [{ type: 'text', text: 'text: must be valid Unicode text: a lone surrogate at character 1' }] });
    expect(await service.memoryCount()).toBe(0);

    // A surrogate pair is a character like any other.
    const pair = await app.inject({ method: 'POST', url: '/mem', headers: json, payload: JSON.stringify({ text: 'emoji 😀 and NUL \u0000' }) });
    expect(pair.statusCode).toBe(201);
    expect(pair.json().text).toBe('emoji 😀 and NUL \u0000');
  });
});
