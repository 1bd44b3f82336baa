import { randomBytes } from 'node:crypto';
import { copyFile, open, readFile, rm, stat, symlink, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { VectorIndex } from '../../src/retrieval/vector-index.js';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { encodeVector } from '../../src/store/stored-record.js';
import { build, openService, tempDir, testEmbedder } from '../support/helper.js';
import { KEEP_GRAPHS, KEEP_GRAPHS_WEIGHTS, request, startServerProcess, waitForIndexes, type ServerProcess } from '../support/server-process.js';

/**
 * The JSONL is the truth and the HNSW file a cache: a cache that is damaged or gone costs a
 * rebuild, never a crash or a lost memory. A write the disk refuses is a 503 (retryable),
 * never a 200, and leaves the files whole.
 */

const DIMENSIONS = 64; // The server's hash embedder's default, so its caches match ours.
const TOPICS: Record<string, string[]> = {
  garbage: ['violin', 'orchestra', 'rehearsal'],
  truncated: ['glacier', 'crampons', 'summit'],
  empty: ['sourdough', 'starter', 'oven'],
  missing: ['kayak', 'rapids', 'paddle'],
  'meta-missing': ['chess', 'opening', 'gambit'],
  'meta-garbage': ['pottery', 'kiln', 'glaze'],
  'in-place': ['telescope', 'nebula', 'eyepiece'],
};

function messagesAbout(words: string[]) {
  return words.map((word, i) => ({ role: i % 2 ? 'Melanie' : 'Caroline', content: `We talked about the ${word} for a long while, item ${i}`, timestamp: 1_700_000_000_000 + i }));
}

/** Writes each user's memories with the service itself, closing it so the caches are flushed. */
async function prepare(dataDir: string, users: string[]): Promise<void> {
  const service = await openService({ dataDir, weights: { ...KEEP_GRAPHS_WEIGHTS } });
  for (const userId of users) {
    await service.addConversation({ requestId: `prep-${userId}`, userId, sessionId: 's1', messages: messagesAbout(TOPICS[userId]) });
  }
  await service.close();
  const store = new JsonlStore(dataDir, silentLogger());
  for (const userId of users) expect((await stat(store.cacheFilePath(userId, 'vectors.hnsw'))).size).toBeGreaterThan(0);
}

async function expectSearchable(server: ServerProcess, userId: string): Promise<void> {
  for (const message of messagesAbout(TOPICS[userId])) {
    let response;
    try {
      response = await request(`${server.url}/search`, { body: { query: message.content, user_id: userId, top_k: 3 } });
    } catch (error) {
      const exit = await Promise.race([server.exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 500))]);
      throw new Error(`search failed (${(error as Error).message}); server exit: ${JSON.stringify(exit)}; stderr:\n${server.stderr().slice(-2000)}`);
    }
    expect(response.status, response.text).toBe(200);
    expect((response.body.data as Array<{ content: string }>).some((hit) => hit.content.endsWith(message.content)), `${userId}: ${message.content}`).toBe(true);
  }
}

async function vectorCounts(server: ServerProcess): Promise<Map<string, { count: number; vectors: number }>> {
  const stats = (await request(`${server.url}/mem/stats`)).body as { per_user: Array<{ user_id: string; count: number; index: { vectors: number } }> };
  return new Map(stats.per_user.map((entry) => [entry.user_id, { count: entry.count, vectors: entry.index.vectors }]));
}

describe('index cache faults', () => {
  it('rebuilds a garbled, truncated, empty or missing index file (or its meta) from the JSONL on start, and rewrites it', async () => {
    const dataDir = await tempDir('memorypool-faults-');
    const users = ['garbage', 'truncated', 'empty', 'missing', 'meta-missing', 'meta-garbage'];
    await prepare(dataDir, users);
    const store = new JsonlStore(dataDir, silentLogger());
    const hnsw = (userId: string) => store.cacheFilePath(userId, 'vectors.hnsw');
    const meta = (userId: string) => store.cacheFilePath(userId, 'vectors.meta.json');

    await writeFile(hnsw('garbage'), randomBytes((await stat(hnsw('garbage'))).size));
    await truncate(hnsw('truncated'), Math.floor((await stat(hnsw('truncated'))).size / 2));
    await truncate(hnsw('empty'), 0);
    await rm(hnsw('missing'));
    await rm(meta('meta-missing'));
    await writeFile(meta('meta-garbage'), '{"model": "hash-embed');

    const server = await startServerProcess({ dataDir, env: { ...KEEP_GRAPHS } });
    await waitForIndexes(server);
    const warned = server.logs().filter((record) => record.level === 40 && /rebuild/.test(String(record.msg)));
    for (const userId of ['garbage', 'truncated', 'empty', 'missing', 'meta-garbage']) {
      expect(warned.some((record) => String(record.file).startsWith(store.userDir(userId) + path.sep)), `warning for ${userId}`).toBe(true);
    }
    const counts = await vectorCounts(server);
    for (const userId of users) {
      expect(counts.get(userId)).toEqual({ count: TOPICS[userId].length, vectors: TOPICS[userId].length });
      await expectSearchable(server, userId);
    }

    // The rebuilt indexes are written back whole at shutdown.
    expect(await server.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    for (const userId of users) {
      const index = await VectorIndex.read(hnsw(userId), DIMENSIONS);
      expect(index.size).toBe(TOPICS[userId].length);
      expect(JSON.parse(await readFile(meta(userId), 'utf8'))).toMatchObject({ dimensions: DIMENSIONS });
    }
  });

  it('does not trust an index file whose bytes changed in place (structure intact) when the JSONL has moved on: rebuilt, never a crash', async () => {
    const dataDir = await tempDir('memorypool-faults-');
    await prepare(dataDir, ['in-place']);
    const store = new JsonlStore(dataDir, silentLogger());
    // One memory written after the cache was flushed (as after a crash): loading adds its vector
    // to the cached graph. (Small users are searched exhaustively, so it is this insert, or a
    // search of a user above the exhaustive limit, that walks the graph.)
    const [last] = (await store.load('in-place')).records.slice(-1);
    const extraText = 'We talked about the eyepiece cleaning kit, item 9';
    const [vector] = await testEmbedder().embed([`Caroline: ${extraText}`]);
    await store.append('in-place', [{ ...last, id: 'extra-memory', text: extraText, seq: last.seq + 1, request_id: 'extra', batch: undefined, vec: encodeVector(vector) }]);
    // hnswlib's header: ... maxlevel (int32 at 48), enterpoint_node (uint32 at 52), ... A flipped
    // entry point passes hnswlib's own size checks; every search then starts from a node that
    // does not exist.
    const handle = await open(store.cacheFilePath('in-place', 'vectors.hnsw'), 'r+');
    const entryPoint = Buffer.alloc(4);
    entryPoint.writeUInt32LE(0x7fff_fff0);
    await handle.write(entryPoint, 0, 4, 52);
    await handle.close();

    let server: ServerProcess;
    try {
      server = await startServerProcess({ dataDir, env: { ...KEEP_GRAPHS } });
    } catch (error) {
      throw new Error(`the server did not survive loading the damaged index: ${(error as Error).message.slice(0, 300)}`);
    }
    await expectSearchable(server, 'in-place');
    await waitForIndexes(server);
    expect((await vectorCounts(server)).get('in-place')).toEqual({ count: 4, vectors: 4 });
    expect(await server.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});

describe('write faults', () => {
  it('a full disk (memories.jsonl on /dev/full: ENOSPC) answers 503 with the error body on every write route, never 200, and changes nothing', async () => {
    const { app, service, dataDir } = await build();
    const add = (requestId: string, userId: string, word: string) =>
      app.inject({ method: 'POST', url: '/add', payload: { request_id: requestId, user_id: userId, session_id: 's', messages: messagesAbout([word]) } });
    expect((await add('a1', 'full-u', 'lighthouse')).statusCode).toBe(200);
    expect((await add('b1', 'other-u', 'harbour')).statusCode).toBe(200);
    // The server holds the user when the disk fills (an Add alone does not load it).
    expect((await app.inject({ method: 'GET', url: '/mem/list?user_id=full-u&limit=100' })).statusCode).toBe(200);

    const file = path.join(new JsonlStore(dataDir, silentLogger()).userDir('full-u'), 'memories.jsonl');
    const saved = `${file}.saved`;
    await copyFile(file, saved);
    await rm(file);
    await symlink('/dev/full', file);

    const refused = [
      await add('a2', 'full-u', 'volcano'),
      await app.inject({ method: 'POST', url: '/mem', payload: { user_id: 'full-u', text: 'the volcano trip' } }),
      await app.inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'add', user_id: 'full-u', text: 'the volcano trip' } } }),
    ];
    for (const response of refused) {
      expect(response.statusCode, response.body).toBe(503);
      expect(response.json().detail.reason).toMatch(/disk is full/);
      expect(response.headers['retry-after']).toBe('1');
    }
    // Nothing half-admitted: reads see only what was acknowledged, other users write on.
    const listed = (await app.inject({ method: 'GET', url: '/mem/list?user_id=full-u&limit=100' })).json();
    expect(listed.map((memory: { text: string }) => memory.text)).toEqual([messagesAbout(['lighthouse'])[0].content]);
    const search = (await app.inject({ method: 'POST', url: '/search', payload: { query: 'volcano', user_id: 'full-u', top_k: 10 } })).json();
    expect(search.data.every((hit: { content: string }) => !hit.content.includes('volcano'))).toBe(true);
    expect((await add('b2', 'other-u', 'ferry')).statusCode).toBe(200);
    expect((await add('a2', 'full-u', 'volcano')).statusCode).toBe(503); // The request id was not used up.

    // Space comes back: the same Add now succeeds, and the store reloads whole.
    await rm(file);
    await copyFile(saved, file);
    await rm(saved);
    expect((await add('a2', 'full-u', 'volcano')).statusCode).toBe(200);
    await service.close();
    const reopened = await openService({ dataDir });
    expect((await reopened.list({ userId: 'full-u', limit: 100 })).map((memory) => memory.text).sort()).toEqual(
      [messagesAbout(['lighthouse'])[0].content, messagesAbout(['volcano'])[0].content].sort(),
    );
    expect(await reopened.list({ userId: 'other-u', limit: 100 })).toHaveLength(2);
  });

  it('a write cut short mid-append (EFBIG past a file-size limit) answers 503, and a restart loads exactly the acknowledged Adds', async () => {
    const dataDir = await tempDir('memorypool-faults-');
    const limited = await startServerProcess({ dataDir, fileSizeLimitKb: 12 });
    const outcomes: Array<{ requestId: string; userId: string; texts: string[]; status: number }> = [];
    for (let i = 0; i < 24; i++) {
      const userId = i % 2 ? 'efbig-a' : 'efbig-b';
      const texts = [`Entry ${i}: the orchard needs pruning before spring`, `Entry ${i}: and the cider press needs cleaning`];
      const body = { request_id: `efbig-${i}`, user_id: userId, session_id: 's', messages: texts.map((content) => ({ role: 'Caroline', content })) };
      const response = await request(`${limited.url}/add`, { body });
      expect([200, 503], response.text).toContain(response.status);
      if (response.status === 503) expect(response.body.detail.reason).toMatch(/Storage is unavailable/);
      outcomes.push({ requestId: body.request_id, userId, texts, status: response.status });
    }
    expect(outcomes.filter((outcome) => outcome.status === 503).length).toBeGreaterThan(0);
    expect(outcomes.filter((outcome) => outcome.status === 200).length).toBeGreaterThan(0);
    expect(await limited.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    const restarted = await startServerProcess({ dataDir, env: { ...KEEP_GRAPHS } });
    expect(restarted.logs().filter((record) => /quarantin|torn|malformed/.test(String(record.msg)))).toEqual([]);
    for (const userId of ['efbig-a', 'efbig-b']) {
      const listed = (await request(`${restarted.url}/mem/list?user_id=${userId}&limit=1000`)).body as Array<{ text: string }>;
      const expected = outcomes.filter((outcome) => outcome.userId === userId && outcome.status === 200).flatMap((outcome) => outcome.texts);
      expect(listed.map((memory) => memory.text).sort()).toEqual(expected.sort());
    }
  });
});
