import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { JsonlMemoryStore } from '../../src/store/jsonl-memory-store.js';
import { VECTOR_INDEX_FILE } from '../../src/store/vector-index-cache.js';
import { openService, tempDir } from '../support/helper.js';

/** Past this many memories a user searches its HNSW graph (plus BM25) instead of scoring every unit. */
const SMALL_LIMIT = 5;

describe('MemoryService: HNSW inserts after the acknowledgement', () => {
  it('finds a write at once, fills the index behind it, and saves a complete index at close', async () => {
    const dataDir = await tempDir();
    const weights = { exhaustiveLimit: SMALL_LIMIT };
    const first = await openService({ dataDir, weights });
    for (let i = 0; i < 10; i++) await first.addMemory({ userId: 'big', text: `ordinary note number ${i} about the garden` });
    await first.indexesReady();
    expect((await first.stats()).per_user[0].index).toMatchObject({ loaded: true, vectors: 10, complete: true });

    const added = await first.addMemory({ userId: 'big', text: 'the violin lesson moved to Thursday' });
    // Searchable on acknowledgement, whether or not its vector has reached the graph yet.
    const hits = await first.search({ userId: 'big', query: 'violin lesson Thursday', limit: 3 });
    expect(hits[0].memory.id).toBe(added.id);
    await first.indexesReady();
    expect((await first.stats()).per_user[0].index).toMatchObject({ loaded: true, vectors: 11, complete: true });

    // Concurrent writes: every acknowledged one ends up in the graph, none twice.
    const more = await Promise.all(Array.from({ length: 25 }, (_, i) => first.addMemory({ userId: 'big', text: `concurrent note ${i} on chess openings` })));
    expect(new Set(more.map((memory) => memory.id)).size).toBe(25);
    // More units than one slice of the background fill: close waits for the rest before saving.
    const messages = Array.from({ length: 450 }, (_, i) => ({ role: i % 2 ? 'Melanie' : 'Caroline', content: `bulk message ${i}`, timestamp: 1683554160000 + i }));
    expect(await first.addConversation({ requestId: 'bulk', userId: 'big', sessionId: 's1', messages })).toEqual({ stored: true, units: 450 });
    await first.close();

    const second = await openService({ dataDir, weights });
    await second.indexesReady();
    // The index saved at close held all 486, so the start read it instead of rebuilding.
    expect((await second.stats()).per_user[0]).toMatchObject({ count: 486, index: { loaded: true, vectors: 486, complete: true, pending_flush: false } });
    expect((await second.search({ userId: 'big', query: 'concurrent note 7 chess', limit: 1 }))[0].memory.text).toBe('concurrent note 7 on chess openings');
  });

  it('builds the index of a user written for the first time after answering, ready for the next start', async () => {
    const dataDir = await tempDir();
    // Every user past the limit of 0 keeps a graph, the first memory's user too.
    const first = await openService({ dataDir, weights: { exhaustiveLimit: 0 } });
    const outcome = await first.addConversation({
      requestId: 'r1',
      userId: 'fresh',
      sessionId: 's1',
      messages: [{ role: 'Caroline', content: 'I adopted a dog named Max', timestamp: 1683554160000 }],
    });
    expect(outcome).toEqual({ stored: true, units: 1 });
    expect((await first.search({ userId: 'fresh', query: 'dog name', limit: 1 }))[0].memory.text).toBe('I adopted a dog named Max');
    await first.flushIndexes();
    expect((await first.stats()).per_user[0].index).toMatchObject({ loaded: true, vectors: 1, complete: true, pending_flush: false });
  });

  it('answers writes and searches of a user while its graph is being flushed, and saves their changes after', async () => {
    const dataDir = await tempDir();
    const weights = { exhaustiveLimit: SMALL_LIMIT };
    // The seam: each graph file's write, once hnswlib has written it, waits for `release` before
    // its rename, holding the user's graph lock as a slow disk (or a graph of a million) would.
    const store = new JsonlMemoryStore(dataDir, silentLogger());
    const files = store.indexCache;
    const stageCacheFile = files.stageCacheFile.bind(files);
    let gate: { entered: Promise<void>; enter: () => void; release: () => void } | null = null;
    const closeGate = (): NonNullable<typeof gate> => {
      let enter!: () => void;
      let release!: () => void;
      const entered = new Promise<void>((resolve) => (enter = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      gate = { entered, enter, release };
      files.stageCacheFile = (userId, name, write) =>
        stageCacheFile(userId, name, async (temp) => {
          await write(temp);
          if (name !== VECTOR_INDEX_FILE || !gate) return;
          gate.enter();
          await released;
        });
      return gate;
    };

    const service = await openService({ store, weights });
    const notes = [];
    for (let i = 0; i < 12; i++) notes.push(await service.addMemory({ userId: 'big', text: `ordinary note number ${i} about the garden` }));
    await service.indexesReady();

    const held = closeGate();
    const flushing = service.flushIndexes();
    await held.entered;
    // Each of these waited for the flush before: it held the user's lock while the graph was written.
    const added = await service.addMemory({ userId: 'big', text: 'the violin lesson moved to Thursday' });
    await service.delete('big', notes[3].id);
    const updated = await service.updateMemory({ userId: 'big', id: notes[5].id, text: 'the piano tuner comes on Monday' });
    expect((await service.search({ userId: 'big', query: 'violin lesson Thursday', limit: 1 }))[0].memory.id).toBe(added.id);
    expect((await service.search({ userId: 'big', query: 'piano tuner Monday', limit: 1 }))[0].memory.id).toBe(updated.id);
    const all = await service.search({ userId: 'big', query: 'ordinary note garden', limit: 20 });
    expect(all.map((hit) => hit.memory.id)).not.toContain(notes[3].id);
    expect(all.map((hit) => hit.memory.text)).not.toContain('ordinary note number 5 about the garden');
    // The new units wait outside the graph (scored exhaustively) until the write is done.
    expect((await service.stats()).per_user[0].index).toMatchObject({ vectors: 10, complete: false });

    gate = null;
    held.release();
    await flushing;
    await service.indexesReady();
    expect((await service.stats()).per_user[0].index).toMatchObject({ vectors: 12, complete: true, pending_flush: true });
    await service.close();

    const second = await openService({ dataDir, weights });
    await second.indexesReady();
    expect((await second.stats()).per_user[0]).toMatchObject({ count: 12, index: { loaded: true, vectors: 12, complete: true } });
    expect((await second.search({ userId: 'big', query: 'violin lesson Thursday', limit: 1 }))[0].memory.id).toBe(added.id);
  });
});
