import { writeFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { readVectorIndexCache, VECTOR_INDEX_FILE, writeVectorIndexCache, type CachedVectorIndex } from '../../src/store/vector-index-cache.js';
import { tempDir } from '../support/helper.js';

describe('vector index cache', () => {
  it('two writers of one user\'s cache (two stores, as two processes) never leave a reader a graph beside the other\'s meta', async () => {
    const dataDir = await tempDir();
    const writers = [new JsonlStore(dataDir, silentLogger()), new JsonlStore(dataDir, silentLogger())];
    const reader = new JsonlStore(dataDir, silentLogger());
    await writers[0].init();
    await writers[0].append('u', [{ id: 'm0', user_id: 'u', text: 'x', tags: [], importance: 0.5, source: 'cli', created_at: '2024-01-01T00:00:00.000Z', seq: 0 }]);
    const seen: Array<CachedVectorIndex['status']> = [];
    const write = (store: JsonlStore, round: number) =>
      writeVectorIndexCache(store, 'u', (temp) => writeFile(temp, `graph of round ${round} `.repeat(2_000 + round)), { model: 'm', dimensions: 8, analyzer: 'a', complete: true, max_seq: round });
    // Each round, both writers write while the reader reads; from the second round on there is
    // always a pair on disk to read (their graphs are staged outside the lock, renamed inside it).
    for (let round = 0; round < 15; round++) {
      await Promise.all([
        ...writers.map((store, w) => write(store, round * 2 + w)),
        (async () => {
          for (let read = 0; read < 3; read++) {
            seen.push((await reader.withCacheLock('u', () => readVectorIndexCache(reader, 'u'))).status);
            await new Promise((resolve) => setImmediate(resolve));
          }
        })(),
      ]);
    }
    expect(seen.filter((status) => status === 'damaged')).toEqual([]);
    expect(seen).toContain('intact');
    const last = await readVectorIndexCache(reader, 'u');
    expect(last.status).toBe('intact');
  });

  it('writes no cache for a user whose memories another process deleted (the folder stays gone)', async () => {
    const dataDir = await tempDir();
    const store = new JsonlStore(dataDir, silentLogger());
    await store.init();
    await writeVectorIndexCache(store, 'gone', (temp) => writeFile(temp, 'graph'), { model: 'm', dimensions: 8, analyzer: 'a', complete: true, max_seq: 0 });
    expect(await store.listUsers()).toEqual([]);
    expect((await readVectorIndexCache(store, 'gone')).status).toBe('missing');
  });

  it('renames no graph staged (outside the cache lock) for a user deleted before the rename', async () => {
    const dataDir = await tempDir();
    const store = new JsonlStore(dataDir, silentLogger());
    await store.init();
    await store.append('u', [{ id: 'm0', user_id: 'u', text: 'x', tags: [], importance: 0.5, source: 'cli', created_at: '2024-01-01T00:00:00.000Z', seq: 0 }]);
    const staged = await store.stageCacheFile('u', VECTOR_INDEX_FILE, (temp) => writeFile(temp, 'graph'));
    expect(staged).not.toBeNull();
    await store.deleteUser('u');
    expect(await store.withCacheLock('u', () => staged!.commit())).toBe(false);
    await staged!.discard();
    expect(await store.listUsers()).toEqual([]);
    expect((await readVectorIndexCache(store, 'u')).status).toBe('missing');
  });
});
