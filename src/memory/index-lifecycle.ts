import type { Logger } from '../logger.js';
import { isDiskFull } from '../errors.js';
import { ANALYZER_VERSION } from '../retrieval/analyzer.js';
import { VectorIndex } from '../retrieval/vector-index.js';
import { readVectorIndexCache, writeVectorIndexCache, type IndexCacheFiles, type VectorIndexMeta } from '../store/vector-index-cache.js';
import { errorMessage } from './memory-records.js';
import type { UserState } from './user-state.js';

/**
 * Vectors added to an HNSW index per turn of the event loop (~5-8 ms of work): short enough that
 * the encoder's finished runs and the requests waiting on the loop are not held up behind a slice.
 */
const INDEX_SLICE = 64;

export interface IndexLifecycleOptions {
  /** Where index caches live; null rebuilds every index in memory on load (nothing is written). */
  cache: IndexCacheFiles | null;
  modelId: string;
  dimensions: number;
  /** Users up to this size are scored exhaustively and never search their graph. */
  exhaustiveLimit: number;
  /** Flush index caches this long after the last write (ms); 0 flushes only on close. */
  flushDelayMs: number;
  logger: Logger;
}

const FLUSH_FAILED = 'index cache flush failed; it is rebuilt from the stored vectors on the next start';

/**
 * The per-user HNSW index: attached from its cache file (or built) when a user needs it, filled
 * in the background a slice at a time, flushed to its cache a moment after the last write. The
 * index is a cache of the stored vectors: losing it costs a rebuild, never data.
 *
 * Only users past the exhaustive limit keep one: smaller users are scored exhaustively and never
 * search a graph, and keeping theirs current cost an Add about half of its main-thread work (an
 * index created per new user, ~3 ms, and an insert per memory, ~0.13 ms, against ~0.54 ms of the
 * thread's work per message in all: bench/HISTORY.md, issue 20). A user that grows past the limit
 * gets its graph then, filled in the background while its searches stay exhaustive. With its graph
 * a user holds its vectors as int8 codes (`UserCorpus.compactVectors`): the graph has its own float
 * copy, and the codes cost a quarter of the floats they replace.
 */
export class IndexLifecycle {
  private readonly options: IndexLifecycleOptions;
  /** Users with a background fill under way (see indexLater). */
  private readonly filling = new WeakSet<UserState>();
  closing = false;

  constructor(options: IndexLifecycleOptions) {
    this.options = options;
  }

  /** Whether the user keeps an HNSW graph: once past the exhaustive limit (and from then on, once it has one). */
  keepsGraph(state: UserState): boolean {
    return state.corpus.vectors !== null || state.records.size > this.options.exhaustiveLimit;
  }

  /** Reads (or creates) the HNSW index of a user that keeps one (caller holds the lock) and fills in what it lacks in the background. */
  async attach(state: UserState): Promise<void> {
    if (state.corpus.vectors || !this.keepsGraph(state)) return;
    await this.attachOnly(state);
    if (!state.corpus.vectorIndexComplete) state.indexCompletion = this.complete(state).then(() => undefined);
  }

  /** Reads (or creates) the index and attaches it, leaving what it lacks in `unindexed` (caller holds the lock). */
  private async attachOnly(state: UserState): Promise<void> {
    const index = await this.openVectorIndex(state.userId, state.records.size);
    state.corpus.attachVectorIndex(index);
  }

  /**
   * After an acknowledged write (its HNSW inserts deferred): attaches the user's index if needed
   * and moves the deferred vectors into it, a slice per turn of the event loop, under the lock.
   * Until then searches score the units exhaustively, so the write is searchable meanwhile.
   * `indexCompletion` settles when the index holds every unit.
   */
  indexLater(state: UserState): void {
    if (this.filling.has(state) || state.retired || !this.keepsGraph(state)) return;
    this.filling.add(state);
    state.indexCompletion = this.fillLater(state);
  }

  private async fillLater(state: UserState): Promise<void> {
    let filled = false;
    try {
      // After the acknowledgement: the answer goes out before any of the index work.
      await new Promise<void>((resolve) => setImmediate(resolve));
      await state.lock.run(() => (state.retired || state.corpus.vectors ? Promise.resolve() : this.attachOnly(state)));
      filled = await this.complete(state);
    } catch (error) {
      this.options.logger.error({ err: errorMessage(error) }, 'vector index could not be opened; searches stay exhaustive');
    } finally {
      this.filling.delete(state);
    }
    // A write that slipped in after the last slice found this fill still running: take its units too.
    if (filled && !state.retired && !state.corpus.vectorIndexComplete) {
      this.indexLater(state);
      await state.indexCompletion;
    }
  }

  /** The start's background loading: every user past the exhaustive limit gets its index, read from its cache or rebuilt. */
  async attachAll(states: readonly UserState[]): Promise<void> {
    for (const state of states) {
      if (this.closing) return;
      if (!this.keepsGraph(state)) continue;
      try {
        await state.lock.run(() => (state.retired ? Promise.resolve() : this.attach(state)));
      } catch (error) {
        this.options.logger.error({ err: errorMessage(error) }, 'vector index could not be opened; searches stay exhaustive');
      }
    }
  }

  /** After a write to a user that keeps a graph: its cache is flushed a moment later. */
  markDirty(state: UserState): void {
    if (!state.corpus.vectors) return;
    state.indexDirty = true;
    if (this.options.flushDelayMs <= 0 || this.closing || !this.options.cache) return;
    if (state.flushTimer) clearTimeout(state.flushTimer);
    state.flushTimer = setTimeout(() => {
      state.flushTimer = null;
      this.flush(state).catch((error) => this.options.logger.warn({ err: errorMessage(error) }, FLUSH_FAILED));
    }, this.options.flushDelayMs);
    state.flushTimer.unref();
  }

  /**
   * Writes the user's HNSW cache (temp file, then rename) under the graph lock, not the user's:
   * a timer's flush may be writing right now with the flag already cleared, and the next waits
   * for it. Writes go on meanwhile; their graph changes wait for the write's end (VectorIndex.write)
   * and are scored exhaustively until then, so each is searchable when acknowledged.
   */
  flush(state: UserState): Promise<void> {
    return state.graphLock.run(() => this.flushLocked(state));
  }

  private async flushLocked(state: UserState): Promise<void> {
    if (state.flushTimer) clearTimeout(state.flushTimer);
    state.flushTimer = null;
    const cache = this.options.cache;
    if (state.retired || !state.indexDirty) return;
    state.indexDirty = false;
    if (!cache) return;
    try {
      const vectors = state.corpus.vectors;
      if (!vectors) return;
      await writeVectorIndexCache(cache, state.userId, (temp) => vectors.write(temp), {
        model: this.options.modelId,
        dimensions: this.options.dimensions,
        analyzer: ANALYZER_VERSION,
        // Not while units wait to be re-embedded: the next start must not take it for a whole one.
        complete: state.corpus.vectorIndexComplete && state.corpus.unembeddedCount === 0,
        max_seq: state.nextSeq - 1,
      });
    } catch (error) {
      state.indexDirty = true;
      throw error;
    } finally {
      // The inserts of writes that came in during the write, held back until now.
      if (!state.retired && state.corpus.vectors && !state.corpus.vectorIndexComplete) this.indexLater(state);
    }
  }

  /**
   * Fills the HNSW index with the vectors a fresh or stale cache lacks, a slice at a time under
   * the graph lock, so a start with a missing index serves at once (exhaustive scoring meanwhile),
   * writes never wait for a slice, and no slice runs while the index is being saved.
   */
  private async complete(state: UserState): Promise<boolean> {
    try {
      for (;;) {
        const remaining = await state.graphLock.run(async () => (state.retired ? 0 : state.corpus.indexPending(INDEX_SLICE)));
        if (remaining === 0) break;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      if (!state.retired) this.markDirty(state);
      return true;
    } catch (error) {
      this.options.logger.error({ err: errorMessage(error) }, 'vector index rebuild failed; searches stay exhaustive');
      return false;
    }
  }

  private builtByThisModel(meta: VectorIndexMeta): boolean {
    return meta.model === this.options.modelId && meta.dimensions === this.options.dimensions;
  }

  /** The user's cached index when intact and of this model, else a fresh one to fill. */
  private async openVectorIndex(userId: string, count: number): Promise<VectorIndex> {
    const fresh = (): VectorIndex => VectorIndex.create(this.options.dimensions, Math.max(1024, count * 2));
    const cache = this.options.cache;
    if (!cache) return fresh();
    return readingCache(cache, userId, () => this.readCachedIndex(cache, userId, fresh));
  }

  /** `openVectorIndex` under the cache lock: the graph proven intact is the graph read. */
  private async readCachedIndex(cache: IndexCacheFiles, userId: string, fresh: () => VectorIndex): Promise<VectorIndex> {
    const cached = await readVectorIndexCache(cache, userId);
    if (cached.status === 'missing') return fresh();
    const logger = this.options.logger;
    if (cached.status === 'damaged') {
      logger.warn({ file: cached.metaFile, reason: cached.reason }, 'vector index damaged: rebuilding from the stored vectors');
      return fresh();
    }
    if (!this.builtByThisModel(cached.meta)) {
      logger.info({ file: cached.file }, 'vector index was built by another model: rebuilding');
      return fresh();
    }
    try {
      return await VectorIndex.read(cached.file, this.options.dimensions);
    } catch (error) {
      logger.warn({ file: cached.file, err: errorMessage(error) }, 'vector index unreadable: rebuilding from the stored vectors');
      return fresh();
    }
  }
}

/**
 * Reads a user's index cache under its lock. On a disk too full to create the lock file, without
 * it: a read needs no space, and what it reads is still checked (the graph against its meta's
 * checksum; labels against the user's memories on attach), so a full disk costs a log line about
 * the writes that fail, not the cache every load could still use.
 */
function readingCache<T>(cache: IndexCacheFiles, userId: string, read: () => Promise<T>): Promise<T> {
  return cache.withCacheLock(userId, read).catch((error: unknown) => {
    if (isDiskFull(error)) return read();
    throw error;
  });
}
