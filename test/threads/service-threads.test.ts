import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { threadOf } from '../../src/threads/wire.js';
import { tempDir } from '../support/helper.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';

/**
 * The server's service threads (src/threads/): the same answers as the service on the main
 * thread, each user held by one thread, the pool-wide answers (stats, the change feed) put
 * together from every thread, and what crosses between threads (errors inside a batch, a token's
 * scope) arriving whole.
 */

const USERS = Array.from({ length: 8 }, (_, i) => `user-${i}`);
const TOKEN = 'token-all-users';
const SCOPED = 'token-of-user-1';

async function call(server: ServerProcess, method: string, route: string, body?: unknown, token = TOKEN): Promise<{ status: number; body: any }> {
  const response = await fetch(`${server.url}${route}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

async function start(threads: number): Promise<ServerProcess> {
  const dataDir = await tempDir();
  const tokens = path.join(dataDir, '..', `tokens-${path.basename(dataDir)}.json`);
  await writeFile(tokens, JSON.stringify([{ token: TOKEN }, { token: SCOPED, user_prefixes: ['user-1'] }]));
  return startServerProcess({ dataDir, env: { MEMORYPOOL_THREADS: String(threads), MEMORYPOOL_TOKENS_FILE: tokens } });
}

/** The same writes to every user, then every answer that depends on them. */
async function exercise(server: ServerProcess) {
  for (const [u, userId] of USERS.entries()) {
    const operations = Array.from({ length: 12 }, (_, i) => ({ op: 'add', text: `${userId} note ${i}: the ${['dog', 'garden', 'trip', 'book'][i % 4]} of week ${(i * 7 + u) % 10}` }));
    const written = await call(server, 'POST', '/mem/batch', { user_id: userId, operations: [...operations, { op: 'delete', id: 'no-such-id' }] });
    expect(written.status).toBe(200);
    expect(written.body.results.map((result: { status: number }) => result.status)).toEqual([...operations.map(() => 201), 404]);
  }
  const searches = [];
  for (const userId of USERS) {
    for (const q of ['dog', 'trip of week 3', 'garden']) {
      const found = await call(server, 'GET', `/mem/search?user_id=${userId}&q=${encodeURIComponent(q)}&limit=5`);
      expect(found.status).toBe(200);
      searches.push(found.body.map((hit: { text: string; score: number }) => [hit.text, hit.score]));
    }
  }
  // The platform's Search, made whole on the user's thread (PlatformSearchDoor), refusals included.
  for (const userId of USERS) {
    const found = await call(server, 'POST', '/search', { query: 'the dog of week 3', user_id: userId, top_k: 5 });
    expect(found.status).toBe(200);
    // Ids and times (the content's stamp of when it was added) are each server's own: the texts and scores must agree.
    searches.push(found.body.data.map((hit: { content: string; score: number }) => [hit.content.replace(/^\[[^\]]*\] /, ''), hit.score]));
  }
  const refused = [
    await call(server, 'POST', '/search', { query: '', user_id: 'user-1', top_k: 'ten' }),
    await call(server, 'POST', '/search', { query: 'dog', user_id: 'user-2', top_k: 5 }, SCOPED),
    await call(server, 'POST', '/search', { query: 'dog', user_id: 'user-1', top_k: 5 }, SCOPED),
  ];
  const stats = (await call(server, 'GET', '/mem/stats')).body;
  const changes = (await call(server, 'GET', '/mem/changes?after=0&limit=1000')).body;
  const scopedChanges = (await call(server, 'GET', '/mem/changes?after=0&limit=1000', undefined, SCOPED)).body;
  const health = (await call(server, 'GET', '/health')).body;
  return { searches, refused, stats, changes, scopedChanges, health };
}

describe('the service threads', () => {
  it('give each user one thread, the same across starts, spread over the threads', () => {
    const ids = Array.from({ length: 4000 }, (_, i) => `user-${String(i).padStart(5, '0')}`);
    const counts = [0, 0, 0, 0];
    for (const id of ids) counts[threadOf(id, 4)]++;
    for (const count of counts) expect(count).toBeGreaterThan(800);
    expect(ids.map((id) => threadOf(id, 4))).toEqual(ids.map((id) => threadOf(id, 4)));
    expect(threadOf('anyone', 1)).toBe(0);
  });

  it('answer as the service on the main thread does; stats and the change feed cover every thread, each user held once', async () => {
    const [alone, threaded] = await Promise.all([start(0), start(2)]);
    const [expected, actual] = [await exercise(alone), await exercise(threaded)];
    // The users really are spread over both threads.
    expect(new Set(USERS.map((userId) => threadOf(userId, 2))).size).toBe(2);

    expect(actual.searches).toEqual(expected.searches);
    expect(actual.refused.slice(0, 2)).toEqual(expected.refused.slice(0, 2));
    expect(actual.refused.map((answer) => answer.status)).toEqual([422, 403, 200]);
    expect(actual.health.count).toBe(USERS.length * 12);
    const byUser = (stats: { per_user: Array<{ user_id: string }> }) => [...stats.per_user].sort((a, b) => a.user_id.localeCompare(b.user_id));
    expect(byUser(actual.stats)).toEqual(byUser(expected.stats));
    expect({ ...actual.stats, per_user: null }).toEqual({ ...expected.stats, per_user: null });
    // Held once: every user searched is in the cache of exactly one thread.
    expect(actual.stats.cache.users).toBe(USERS.length);
    expect(actual.stats.per_user.every((entry: { cached: boolean }) => entry.cached)).toBe(true);

    const shape = (page: { events: Array<{ seq: number; type: string; user_id: string; memory: { text: string } | null }> }) => page.events.map((event) => [event.type, event.user_id, event.memory?.text]);
    expect(actual.changes.events).toHaveLength(USERS.length * 12);
    // In seq order across both threads' writes, and with the same events as one thread writes them.
    expect(actual.changes.events.map((event: { seq: number }) => event.seq)).toEqual(actual.changes.events.map((_: unknown, i: number) => i + 1));
    expect(shape(actual.changes)).toEqual(shape(expected.changes));
    // A scoped token's scope crosses to the thread as data: only its user's events.
    expect(actual.scopedChanges.events.length).toBe(12);
    expect(shape(actual.scopedChanges)).toEqual(shape(expected.scopedChanges));
  }, 60_000);

  it('serve a write on one thread to a read on the same user at once, and a scoped token stays in its scope', async () => {
    const server = await start(2);
    for (const userId of USERS) {
      const added = await call(server, 'POST', '/mem', { user_id: userId, text: `${userId} keeps bees on the roof` });
      expect(added.status).toBe(201);
      const found = await call(server, 'GET', `/mem/search?user_id=${userId}&q=bees`);
      expect(found.body.map((hit: { id: string }) => hit.id)).toContain(added.body.id);
    }
    // Expired memories held by any thread leave /health's count at once, before the sweep deletes them.
    for (const userId of USERS) {
      expect((await call(server, 'POST', '/mem', { user_id: userId, text: `${userId} is visiting for a day`, ttl_seconds: 1 })).status).toBe(201);
      expect((await call(server, 'GET', `/mem/search?user_id=${userId}&q=visiting`)).status).toBe(200);
    }
    expect((await call(server, 'GET', '/health')).body.count).toBe(USERS.length * 2);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await call(server, 'GET', '/health')).body.count).toBe(USERS.length);
    expect((await call(server, 'GET', '/mem/search?user_id=user-2&q=bees', undefined, SCOPED)).status).toBe(403);
    const missing = await call(server, 'GET', '/mem/does-not-exist?user_id=user-3');
    expect(missing.status).toBe(404);
    expect(missing.body.error).toBe(`No memory with id "does-not-exist"`);
  }, 60_000);
});
