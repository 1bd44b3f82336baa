import { Writable } from 'node:stream';
import { writeFile } from 'node:fs/promises';
import { pino } from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { silentLogger, type Logger } from '../../src/logger.js';
import { IndexLifecycle } from '../../src/memory/index-lifecycle.js';
import { admitUnits, emptyUserState, type UserState } from '../../src/memory/user-state.js';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import type { StoredRecord } from '../../src/store/stored-record.js';
import { readVectorIndexCache, VECTOR_INDEX_FILE } from '../../src/store/vector-index-cache.js';
import { tempDir } from '../support/helper.js';

const DIMENSIONS = 16;
const LIMIT = 3;
const embedder = new HashEmbedder({ dimensions: DIMENSIONS });

function record(seq: number): StoredRecord {
  return { id: `m${seq}`, user_id: 'u', text: `note number ${seq} about the garden`, tags: [], importance: 0.5, source: 'cli', created_at: '2024-01-01T00:00:00.000Z', seq };
}

/** A user holding `count` memories with their vectors; `deferIndex` as an acknowledged write leaves them. */
async function userWith(count: number, { deferIndex = false, state = emptyUserState('u', 0) } = {}): Promise<UserState> {
  const records = Array.from({ length: count }, (_, i) => record(state.nextSeq + i));
  const vectors = await embedder.embed(records.map((r) => r.text));
  admitUnits(state, records.map((r, i) => ({ record: r, vector: vectors[i]! })), { deferIndex });
  return state;
}

/** A logger whose lines the test reads (`msg` of each). */
function recordingLogger(): { logger: Logger; messages: string[] } {
  const messages: string[] = [];
  const sink = new Writable({ write(chunk, _encoding, done) { messages.push((JSON.parse(String(chunk)) as { msg: string }).msg); done(); } });
  return { logger: pino({ level: 'info' }, sink), messages };
}

/** A JSONL store holding the user's memories file, so its index cache can be written beside it. */
async function cacheStore(): Promise<JsonlStore> {
  const store = new JsonlStore(await tempDir(), silentLogger());
  await store.init();
  await store.append('u', [record(0)]);
  return store;
}

function lifecycle(options: Partial<ConstructorParameters<typeof IndexLifecycle>[0]> = {}): IndexLifecycle {
  return new IndexLifecycle({ cache: null, modelId: 'hash-16', dimensions: DIMENSIONS, exhaustiveLimit: LIMIT, flushDelayMs: 0, logger: silentLogger(), ...options });
}

describe('IndexLifecycle', () => {
  it('keeps a graph only for a user past the exhaustive limit', async () => {
    const index = lifecycle();
    expect(index.keepsGraph(await userWith(LIMIT))).toBe(false);
    expect(index.keepsGraph(await userWith(LIMIT + 1))).toBe(true);
  });

  it('attaches no graph to a user at the limit, and a complete one to a user past it', async () => {
    const index = lifecycle();
    const small = await userWith(LIMIT);
    await index.attach(small);
    expect(small.corpus.vectors).toBeNull();

    const large = await userWith(LIMIT + 2);
    await index.attach(large);
    await large.indexCompletion;
    expect(large.corpus.vectors?.size).toBe(LIMIT + 2);
    expect(large.corpus.vectorIndexComplete).toBe(true);
  });

  it('moves the vectors of an acknowledged write into the graph after it, and keeps a user that has a graph even when it shrinks', async () => {
    const index = lifecycle();
    const state = await userWith(LIMIT + 1);
    await index.attach(state);
    await state.indexCompletion;
    await userWith(5, { state, deferIndex: true });
    expect(state.corpus.vectorIndexComplete).toBe(false);
    expect(state.corpus.vectors?.size).toBe(LIMIT + 1);

    index.indexLater(state);
    await state.indexCompletion;
    expect(state.corpus.vectorIndexComplete).toBe(true);
    expect(state.corpus.vectors?.labels().sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    // The graph, once there, stays: keepsGraph no longer looks at the count.
    state.records.clear();
    expect(index.keepsGraph(state)).toBe(true);
  });

  it('does nothing for a user below the limit when asked to index later, and nothing for a retired one', async () => {
    const index = lifecycle();
    const small = await userWith(LIMIT, { deferIndex: true });
    index.indexLater(small);
    await small.indexCompletion;
    expect(small.corpus.vectors).toBeNull();

    const retired = await userWith(LIMIT + 1, { deferIndex: true });
    retired.retired = true;
    index.indexLater(retired);
    await retired.indexCompletion;
    expect(retired.corpus.vectors).toBeNull();
  });

  it('flushes a dirty graph with its meta, and a second lifecycle of the same model reads it instead of rebuilding', async () => {
    const store = await cacheStore();
    const first = lifecycle({ cache: store });
    const state = await userWith(LIMIT + 2);
    await first.attach(state);
    await state.indexCompletion;
    expect(state.indexDirty).toBe(true);
    await first.flush(state);
    expect(state.indexDirty).toBe(false);
    const cached = await readVectorIndexCache(store, 'u');
    expect(cached).toMatchObject({ status: 'intact', meta: { model: 'hash-16', dimensions: DIMENSIONS, complete: true, max_seq: LIMIT + 1 } });

    const { logger, messages } = recordingLogger();
    const again = await userWith(LIMIT + 2);
    const second = lifecycle({ cache: store, logger });
    await second.attach(again);
    // Read whole from the cache: nothing left to fill, nothing to flush, nothing logged.
    expect(again.corpus.vectorIndexComplete).toBe(true);
    expect(again.corpus.vectors?.size).toBe(LIMIT + 2);
    expect(again.indexDirty).toBe(false);
    expect(messages).toEqual([]);
  });

  it('does not write a graph that is not dirty', async () => {
    const store = await cacheStore();
    const index = lifecycle({ cache: store });
    const state = await userWith(LIMIT + 1);
    await index.attach(state);
    await state.indexCompletion;
    state.indexDirty = false;
    await index.flush(state);
    expect((await readVectorIndexCache(store, 'u')).status).toBe('missing');
  });

  it('rebuilds, saying why, a cache built by another model or one whose graph no longer matches its meta', async () => {
    const store = await cacheStore();
    const writer = lifecycle({ cache: store, modelId: 'another-model' });
    const written = await userWith(LIMIT + 1);
    await writer.attach(written);
    await written.indexCompletion;
    await writer.flush(written);

    const other = recordingLogger();
    const state = await userWith(LIMIT + 1);
    await lifecycle({ cache: store, logger: other.logger }).attach(state);
    expect(other.messages).toEqual(['vector index was built by another model: rebuilding']);
    await state.indexCompletion;
    expect(state.corpus.vectors?.size).toBe(LIMIT + 1);

    await writeFile(store.cacheFilePath('u', VECTOR_INDEX_FILE), 'not the graph the meta describes');
    const damaged = recordingLogger();
    const again = await userWith(LIMIT + 1);
    await lifecycle({ cache: store, modelId: 'another-model', logger: damaged.logger }).attach(again);
    expect(damaged.messages).toEqual(['vector index damaged: rebuilding from the stored vectors']);
    await again.indexCompletion;
    expect(again.corpus.vectorIndexComplete).toBe(true);
  });

  it('flushes a moment after the last write when given a delay, and never once closing', async () => {
    const store = await cacheStore();
    const index = lifecycle({ cache: store, flushDelayMs: 20 });
    const state = await userWith(LIMIT + 1);
    await index.attach(state);
    await state.indexCompletion;
    // complete() marked it dirty, which armed the timer.
    expect(state.flushTimer).not.toBeNull();
    await vi.waitFor(() => expect(state.indexDirty).toBe(false), { timeout: 10_000 });
    await state.graphLock.run(async () => undefined);
    expect((await readVectorIndexCache(store, 'u')).status).toBe('intact');

    index.closing = true;
    index.markDirty(state);
    expect(state.indexDirty).toBe(true);
    expect(state.flushTimer).toBeNull();
  });
});
