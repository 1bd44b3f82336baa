import { appendFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { decodeVector } from '../../src/store/stored-record.js';
import { openService, tempDir } from '../support/helper.js';

const conversation = (requestId: string, userId: string, texts: string[], sessionId = 's1') => ({
  requestId,
  userId,
  sessionId,
  messages: texts.map((content, i) => ({ role: i % 2 ? 'Melanie' : 'Caroline', content, timestamp: 1683554160000 + i * 1000 })),
});

describe('MemoryService', () => {
  it('survives a restart: memories, ids and search results come back', async () => {
    const dataDir = await tempDir();
    const first = await openService({ dataDir });
    const memory = await first.addMemory({ userId: 'default', text: 'The wifi password is hunter2', tags: ['home'] });
    await first.addConversation(conversation('r1', 'conv', ['I love pottery classes', 'Pottery sounds fun!']));
    const before = await first.search({ userId: 'conv', query: 'pottery', limit: 10 });
    await first.close();

    const second = await openService({ dataDir });
    expect(await second.memoryCount()).toBe(3);
    expect(await second.get('default', memory.id)).toEqual(memory);
    const after = await second.search({ userId: 'conv', query: 'pottery', limit: 10 });
    expect(after.map((hit) => hit.memory.id)).toEqual(before.map((hit) => hit.memory.id));
  });

  it('rebuilds a missing or corrupt vector index from the JSONL', async () => {
    const dataDir = await tempDir();
    // A graph is kept past the exhaustive limit only: two memories here keep one.
    const weights = { exhaustiveLimit: 2 };
    const first = await openService({ dataDir, weights });
    await first.addConversation(conversation('r1', 'conv', ['alpha beta', 'gamma delta', 'epsilon zeta']));
    await first.close();
    const userDir = path.join(dataDir, 'users', (await readdir(path.join(dataDir, 'users')))[0]);
    expect(await readdir(userDir)).toContain('vectors.hnsw');
    await writeFile(path.join(userDir, 'vectors.hnsw'), 'garbage');
    const second = await openService({ dataDir, weights });
    expect((await second.search({ userId: 'conv', query: 'gamma', limit: 1 }))[0].memory.text).toBe('gamma delta');
    await second.close();
    await rm(path.join(userDir, 'vectors.hnsw'));
    await rm(path.join(userDir, 'vectors.meta.json'));
    const third = await openService({ dataDir, weights });
    expect((await third.search({ userId: 'conv', query: 'epsilon', limit: 1 }))[0].memory.text).toBe('epsilon zeta');
  });

  it('keeps no HNSW graph for a user within the exhaustive limit, and builds one once it grows past it', async () => {
    const dataDir = await tempDir();
    const weights = { exhaustiveLimit: 4 };
    const first = await openService({ dataDir, weights });
    await first.addConversation(conversation('r1', 'conv', ['alpha beta', 'gamma delta', 'epsilon zeta']));
    await first.indexesReady();
    expect((await first.stats()).per_user[0].index).toEqual({ graph: false, loaded: false, vectors: 0, complete: true, pending_flush: false });
    await first.close();
    const userDir = path.join(dataDir, 'users', (await readdir(path.join(dataDir, 'users')))[0]);
    expect(await readdir(userDir)).not.toContain('vectors.hnsw');

    const second = await openService({ dataDir, weights });
    await second.addConversation(conversation('r2', 'conv', ['eta theta', 'iota kappa'], 's2'));
    await second.indexesReady();
    expect((await second.stats()).per_user[0].index).toMatchObject({ graph: true, loaded: true, vectors: 5, complete: true });
    expect((await second.search({ userId: 'conv', query: 'iota', limit: 1 }))[0].memory.text).toBe('iota kappa');
    await second.close();
    expect(await readdir(userDir)).toContain('vectors.hnsw');
  });

  it('re-embeds stored memories when the model changes', async () => {
    const dataDir = await tempDir();
    const first = await openService({ dataDir, embedder: new HashEmbedder({ dimensions: 32 }) });
    await first.addConversation(conversation('r1', 'conv', ['apples and pears', 'trains and buses']));
    await first.close();
    const second = await openService({ dataDir, embedder: new HashEmbedder({ dimensions: 48 }) });
    const hits = await second.search({ userId: 'conv', query: 'trains', limit: 2 });
    expect(hits[0].memory.text).toBe('trains and buses');
    const units = await second.exportUnits('conv');
    expect(units.every((unit) => unit.vector.length === 48)).toBe(true);
  });

  it('a torn last line is skipped with a warning and the pool still loads', async () => {
    const dataDir = await tempDir();
    const first = await openService({ dataDir });
    await first.addConversation(conversation('r1', 'conv', ['one', 'two']));
    await first.close();
    const userDir = path.join(dataDir, 'users', (await readdir(path.join(dataDir, 'users')))[0]);
    await appendFile(path.join(userDir, 'memories.jsonl'), '{"id":"torn","user_id":"co');
    const second = await openService({ dataDir });
    expect(await second.memoryCount()).toBe(2);
    await second.addConversation(conversation('r2', 'conv', ['three']));
    await second.close();
    const third = await openService({ dataDir });
    expect(await third.memoryCount()).toBe(3);
  });

  it('concurrent writers to one user never lose or interleave a record', async () => {
    const dataDir = await tempDir();
    const service = await openService({ dataDir });
    await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 2 === 0
          ? service.addConversation(conversation(`r${i}`, 'conv', [`message ${i} a`, `message ${i} b`], `s${i % 5}`))
          : service.addMemory({ userId: 'conv', text: `note ${i}` }),
      ),
    );
    expect(await service.memoryCount()).toBe(20 * 2 + 20);
    await service.close();
    const reopened = await openService({ dataDir });
    expect(await reopened.memoryCount()).toBe(60);
    const listed = await reopened.list({ userId: 'conv', limit: 1000 });
    expect(new Set(listed.map((memory) => memory.id)).size).toBe(60);
  });

  it('splits a long message into parts that all point back to it; nothing is cut away', async () => {
    const service = await openService();
    const sentences = Array.from({ length: 30 }, (_, i) => `Sentence number ${i} talks about topic ${i} at some length.`);
    await service.addConversation({ requestId: 'r', userId: 'u', sessionId: 's', messages: [{ role: 'assistant', content: sentences.join(' ') }] });
    const units = await service.exportUnits('u');
    expect(units.length).toBeGreaterThan(1);
    for (const unit of units) {
      expect(unit.memory.message_index).toBe(0);
      expect(unit.memory.parts).toBe(units.length);
      expect(unit.memory.text.split(/\s+/).length).toBeLessThanOrEqual(70);
    }
    expect(units.map((unit) => unit.memory.text).join(' ')).toBe(sentences.join(' '));
  });

  it('ranks the answer of a question found in the turn before it (neighbours)', async () => {
    const service = await openService();
    await service.addConversation(
      conversation('r1', 'conv', [
        'What instrument did you pick up last year?',
        'The violin, and I practise every evening.',
        'We should get coffee sometime.',
        'Sure, the cafe downtown is nice.',
      ]),
    );
    const hits = await service.search({ userId: 'conv', query: 'What instrument does Melanie play?', limit: 4 });
    expect(hits.slice(0, 2).map((hit) => hit.memory.message_index)).toEqual(expect.arrayContaining([0, 1]));
  });

  it('encodes a query only for users with memories, and ranks as before when a write lands while it encodes', async () => {
    const queries: string[][] = [];
    let release: (() => void) | null = null;
    const embedder = new HashEmbedder();
    const inner = embedder.embed.bind(embedder);
    // Records each query call, and can hold one back until released (a slow encoder).
    embedder.embed = async (texts, options) => {
      if (options?.priority === 'query') {
        queries.push([...texts]);
        if (release === null && queries.length === 2) await new Promise<void>((resolve) => (release = resolve));
      }
      return inner(texts, options);
    };
    const service = await openService({ embedder });
    expect(await service.search({ userId: 'nobody', query: 'pottery', limit: 5 })).toEqual([]);
    expect(queries).toEqual([]);

    await service.addConversation(conversation('r1', 'conv', ['I love pottery classes', 'Pottery sounds fun!']));
    expect((await service.search({ userId: 'conv', query: 'pottery', limit: 5 })).length).toBe(2);
    const pending = service.search({ userId: 'conv', query: 'pottery wheel', limit: 5 });
    while (release === null) await new Promise((resolve) => setImmediate(resolve));
    await service.addConversation(conversation('r2', 'conv', ['A pottery wheel arrived today'], 's2'));
    (release as () => void)();
    const hits = await pending;
    expect(hits.map((hit) => hit.memory.text)).toContain('A pottery wheel arrived today');
    expect(hits).toEqual(await service.search({ userId: 'conv', query: 'pottery wheel', limit: 5 }));
    expect(queries.map((texts) => texts[0])).toEqual(['pottery', 'pottery wheel', 'pottery wheel']);
  });

  it('deleteUser leaves other users alone and frees the request ids', async () => {
    const service = await openService();
    await service.addConversation(conversation('r1', 'a', ['x']));
    await service.addConversation(conversation('r1', 'b', ['y']));
    expect(await service.deleteUser('a')).toBe(1);
    expect(await service.search({ userId: 'a', query: 'x', limit: 5 })).toEqual([]);
    expect(await service.search({ userId: 'b', query: 'y', limit: 5 })).toHaveLength(1);
    expect((await service.addConversation(conversation('r1', 'a', ['x']))).stored).toBe(true);
  });
});

describe('MemoryService lifecycle', () => {
  it('exports the stored vectors exactly for a user that keeps a graph (it holds int8 codes in memory)', async () => {
    const dataDir = await tempDir();
    const floats = await openService({ dataDir, embedder: new HashEmbedder({ dimensions: 32 }) });
    await floats.addConversation(conversation('r1', 'conv', ['pottery on Sunday', 'the cafe downtown', 'a violin lesson']));
    const exact = await floats.exportRecords('conv');
    await floats.close();
    const graph = await openService({ dataDir, embedder: new HashEmbedder({ dimensions: 32 }), weights: { exhaustiveLimit: 0 } });
    await graph.indexesReady();
    expect((await graph.exportUnits('conv')).map((unit) => unit.vector)).not.toEqual(exact.map((record) => decodeVector(record.vec!)));
    expect(await graph.exportRecords('conv')).toEqual(exact);
    await graph.close();
  });

  it('exports and re-imports memories, skipping ids already present and re-embedding for another model', async () => {
    const source = await openService({ embedder: new HashEmbedder({ dimensions: 32 }) });
    await source.addConversation(conversation('r1', 'conv', ['pottery on Sunday', 'the cafe downtown']));
    await source.addMemory({ userId: 'other', text: 'remember the milk', tags: ['errand'] });
    const exported = [...(await source.exportRecords('conv')), ...(await source.exportRecords('other'))];
    expect(exported).toHaveLength(3);
    expect(exported.every((record) => typeof record.vec === 'string')).toBe(true);

    const sameModel = await openService({ embedder: new HashEmbedder({ dimensions: 32 }) });
    expect(await sameModel.importRecords(exported)).toEqual({ imported: 3, skipped: 0, reembedded: 0 });
    expect(await sameModel.importRecords(exported)).toEqual({ imported: 0, skipped: 3, reembedded: 0 });
    expect((await sameModel.search({ userId: 'conv', query: 'pottery', limit: 1 }))[0].memory.id).toBe(exported[0].id);

    const otherModel = await openService({ embedder: new HashEmbedder({ dimensions: 48 }) });
    expect(await otherModel.importRecords(exported)).toEqual({ imported: 3, skipped: 0, reembedded: 3 });
    expect((await otherModel.get('other', exported[2].id)).tags).toEqual(['errand']);
    expect((await otherModel.exportUnits('conv')).every((unit) => unit.vector.length === 48)).toBe(true);
  });

  it('purges memories ingested before the retention cutoff, and only those', async () => {
    const dataDir = await tempDir();
    const service = await openService({ dataDir });
    const old = await service.addMemory({ userId: 'u', text: 'old news' });
    const cutoff = Date.now() + 1;
    await new Promise((resolve) => setTimeout(resolve, 5));
    const fresh = await service.addMemory({ userId: 'u', text: 'fresh news' });
    expect(await service.purgeOlderThan(cutoff)).toBe(1);
    await expect(service.get('u', old.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect((await service.search({ userId: 'u', query: 'news', limit: 5 })).map((hit) => hit.memory.id)).toEqual([fresh.id]);
    await service.close();
    const reopened = await openService({ dataDir });
    expect(await reopened.memoryCount()).toBe(1);
  });
});

describe('MemoryService vector index rebuild', () => {
  it('serves at once from a missing index, rebuilds it in the background, and saves it', async () => {
    const dataDir = await tempDir();
    // Past the exhaustive limit, so the user keeps a graph.
    const weights = { exhaustiveLimit: 10 };
    const first = await openService({ dataDir, weights });
    await first.addConversation(conversation('r1', 'conv', Array.from({ length: 30 }, (_, i) => `fact number ${i} about topic ${i}`)));
    await first.close();
    const userDir = path.join(dataDir, 'users', (await readdir(path.join(dataDir, 'users')))[0]);
    await rm(path.join(userDir, 'vectors.hnsw'));

    const second = await openService({ dataDir, weights });
    expect((await second.search({ userId: 'conv', query: 'topic 17', limit: 1 }))[0].memory.text).toBe('fact number 17 about topic 17');
    // The start rebuilds the index in the background; writes meanwhile join it.
    await second.addMemory({ userId: 'conv', text: 'one more fact' });
    await second.indexesReady();
    for (let i = 0; i < 100 && !(await second.stats()).per_user[0].index.complete; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    const stats = await second.stats();
    expect(stats.per_user[0].index).toMatchObject({ vectors: 31, complete: true });
    await second.close();
    expect(await readdir(userDir)).toContain('vectors.hnsw');

    // The saved index is read at the next start, and writes go on joining it.
    const third = await openService({ dataDir, weights });
    await third.indexesReady();
    expect((await third.stats()).per_user[0].index).toMatchObject({ graph: true, loaded: true, vectors: 31, complete: true });
    await third.addMemory({ userId: 'conv', text: 'a fact after the restart' });
    // The write's index work follows its acknowledgement (see index-after-ack.test.ts).
    await third.indexesReady();
    expect((await third.stats()).per_user[0].index).toMatchObject({ loaded: true, vectors: 32, complete: true });
  });
});
