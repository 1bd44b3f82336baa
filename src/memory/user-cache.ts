import type { Logger } from '../logger.js';
import type { AppendResult, BatchResult, MemoryStore, RemoveResult, StoredUnit, UpdateResult } from '../store/memory-store.js';
import type { StoredRecord } from '../store/stored-record.js';
import { BackgroundReembedding } from './background-reembedding.js';
import type { IndexLifecycle } from './index-lifecycle.js';
import { errorMessage } from './memory-records.js';
import { admitUnits, dropUnits, emptyUserState, type UserState } from './user-state.js';

/*
 * Measured (`node --expose-gc dist/bench/cache-footprint.js --users 500 --memories 2`, then 40:
 * live V8 heap plus array buffers over the service's baseline, LoCoMo turns, 512 dimensions;
 * 11.5 and 96.0 MiB), fitted to fixed + per unit: ~15 KB per user and ~4.7 KB per unit, of which
 * 2 KB the vector and ~0.8 KB the text's term below (6 bytes a character). Users loaded whole share strings and one
 * vector slab (3.9 KB a unit at 20,000 units), so for them the estimate errs on the safe side.
 */
/**
 * Bytes a unit costs beyond its text and vector: record, corpus unit, links, map entries, its
 * BM25 postings and term pairs (int32 pairs in pools: 2,850 bytes when they were a JS array a term
 * and a document, 120.4 MiB live in the same measurement) and its entity mentions and index entries.
 */
const UNIT_OVERHEAD_BYTES = 1_800;
/** Bytes a cached user costs with no memories at all (its state, corpus, maps, lock, the BM25 index's arrays). */
const USER_OVERHEAD_BYTES = 15_000;
/** Bytes per HNSW entry beyond its vector copy (graph links at M = 16). */
const GRAPH_ENTRY_BYTES = 300;

export interface UserCacheOptions {
  store: MemoryStore;
  lifecycle: IndexLifecycle;
  modelId: string;
  dimensions: number;
  /** Re-embeds records whose stored vector is missing or of another model (their dense texts), in the background. */
  reembed: (records: readonly StoredRecord[]) => Promise<Float32Array[]>;
  /** Estimated bytes the loaded users may take; unset keeps every user once loaded. */
  budgetBytes?: number;
  logger: Logger;
}

/**
 * The users this replica holds in memory: a cache of the store, loaded on demand, evicted least
 * recently used past a memory budget, and brought up to date on each request by comparing the
 * store's per-user version (a delta of new seqs when only appends and updates happened, else a reload).
 */
export class UserCache {
  private readonly options: UserCacheOptions;
  private readonly store: MemoryStore;
  /** In least-recently-used order (a touch moves a user to the end). */
  private readonly states = new Map<string, UserState>();
  private readonly loading = new Map<string, Promise<UserState>>();
  private readonly evictions = new Set<Promise<void>>();
  /** The sum of the cached users' `cacheBytes`. */
  private bytes = 0;
  private readonly reembedding: BackgroundReembedding;

  constructor(options: UserCacheOptions) {
    this.options = options;
    this.store = options.store;
    this.reembedding = new BackgroundReembedding({
      store: options.store,
      lifecycle: options.lifecycle,
      modelId: options.modelId,
      reembed: options.reembed,
      changed: (state) => this.resize(state),
      logger: options.logger,
    });
  }

  /** Resolves once the users loaded so far have every unit embedded by the current model. */
  reembeddingSettled(): Promise<void> {
    return this.reembedding.settled();
  }

  /** Stops re-embedding after the chunk under way (at close; the next start resumes). */
  stopReembedding(): Promise<void> {
    return this.reembedding.stop();
  }

  get budgetBytes(): number | undefined {
    return this.options.budgetBytes;
  }

  get loaded(): UserState[] {
    return [...this.states.values()];
  }

  peek(userId: string): UserState | undefined {
    return this.states.get(userId);
  }

  /** Whether the user is held here or being loaded. */
  holds(userId: string): boolean {
    return this.states.has(userId) || this.loading.has(userId);
  }

  /** The cached state (loading it if absent), without asking the store whether it is current: for writes, which the store orders. */
  get(userId: string): Promise<UserState> {
    const loaded = this.states.get(userId);
    if (loaded) {
      this.touch(loaded);
      return Promise.resolve(loaded);
    }
    let loading = this.loading.get(userId);
    if (!loading) {
      loading = this.load(userId).finally(() => this.loading.delete(userId));
      this.loading.set(userId, loading);
    }
    return loading;
  }

  /** The user as the store holds it now: every write acknowledged before this call is in it. */
  async fresh(userId: string): Promise<UserState> {
    const state = this.states.get(userId);
    if (!state) return this.get(userId);
    const version = await this.store.version(userId);
    if (version === state.version && !state.retired) {
      this.touch(state);
      return state;
    }
    const current = await state.lock.run(() => this.refreshLocked(state));
    return current ?? this.get(userId);
  }

  /**
   * Applies an acknowledged append to the cache, or marks it stale when another writer came in
   * between. The units are searchable at once (scored exhaustively until in the HNSW graph); their
   * HNSW inserts are left to the background, off the acknowledgement path.
   */
  applyAppend(state: UserState, result: AppendResult, vectors: readonly Float32Array[]): void {
    if (state.version !== result.previousVersion) {
      state.version = -1;
      return;
    }
    admitUnits(state, result.records.map((record, i) => ({ record, vector: vectors[i] })), { deferIndex: true });
    state.version = result.version;
    this.options.lifecycle.markDirty(state);
    this.options.lifecycle.indexLater(state);
    this.resize(state);
    this.enforceBudget(state);
  }

  applyRemove(state: UserState, result: RemoveResult): void {
    if (result.removed.length === 0) return;
    if (state.version !== result.previousVersion) {
      state.version = -1;
      return;
    }
    dropUnits(state, result.removed);
    state.version = result.version;
    this.options.lifecycle.markDirty(state);
    this.resize(state);
  }

  /**
   * Applies an acknowledged update: the old version leaves every index and the new one (under
   * its new seq) enters them, with the new text's vector or, when the text stayed, the old one.
   */
  applyUpdate(state: UserState, result: UpdateResult, vector: Float32Array | undefined): void {
    const kept = vector ?? state.corpus.vectorOf(result.previousSeq);
    if (state.version !== result.previousVersion || !kept) {
      state.version = -1;
      return;
    }
    dropUnits(state, [{ id: result.record.id, seq: result.previousSeq }]);
    admitUnits(state, [{ record: result.record, vector: kept }], { deferIndex: true });
    state.version = result.version;
    this.options.lifecycle.markDirty(state);
    this.options.lifecycle.indexLater(state);
    this.resize(state);
  }

  /**
   * Applies an acknowledged batch, each outcome in order (an update's vector: `vectors[i]`, the
   * new text's, else the one it had), or marks the user stale when another writer came in between.
   */
  applyBatch(state: UserState, result: BatchResult, vectors: ReadonlyArray<Float32Array | undefined>): void {
    if (result.version === result.previousVersion) return;
    if (state.version !== result.previousVersion) {
      state.version = -1;
      return;
    }
    let adds: Array<{ record: StoredRecord; vector: Float32Array }> = [];
    const admitAdds = () => {
      if (adds.length > 0) admitUnits(state, adds, { deferIndex: true });
      adds = [];
    };
    for (const [i, outcome] of result.outcomes.entries()) {
      if (outcome.kind === 'added') adds.push({ record: outcome.record, vector: vectors[i]! });
      if (outcome.kind !== 'updated' && outcome.kind !== 'removed') continue;
      admitAdds();
      if (outcome.kind === 'removed') {
        dropUnits(state, [outcome]);
        continue;
      }
      const kept = vectors[i] ?? state.corpus.vectorOf(outcome.previousSeq);
      dropUnits(state, [{ id: outcome.record.id, seq: outcome.previousSeq }]);
      if (!kept) {
        // Half applied and no vector to go on with (one still being re-embedded): load it again.
        this.retire(state);
        return;
      }
      admitUnits(state, [{ record: outcome.record, vector: kept }], { deferIndex: true });
    }
    admitAdds();
    state.version = result.version;
    this.options.lifecycle.markDirty(state);
    this.options.lifecycle.indexLater(state);
    this.resize(state);
    this.enforceBudget(state);
  }

  /** Takes a user out of the cache (deleted, or reloaded); a writer holding the state starts over. */
  retire(state: UserState): void {
    state.retired = true;
    if (state.flushTimer) clearTimeout(state.flushTimer);
    state.flushTimer = null;
    this.forget(state);
  }

  /** Estimated bytes a user takes in memory: texts (UTF-16 plus analyzer terms), vectors, graph. */
  sizeOf(state: UserState): number {
    const units = state.records.size;
    const vectorBytes = this.options.dimensions * 4;
    const graph = state.corpus.vectors ? state.corpus.vectors.size * (vectorBytes + GRAPH_ENTRY_BYTES) : 0;
    // A user that keeps a graph holds int8 codes and a float32 scale per unit (UserCorpus.compactVectors).
    const unitVectorBytes = state.corpus.vectorsCompact ? this.options.dimensions + 4 : vectorBytes;
    return USER_OVERHEAD_BYTES + state.textChars * 6 + units * (unitVectorBytes + UNIT_OVERHEAD_BYTES) + graph;
  }

  /** Whether the loaded users fill the budget (a background load stops there). */
  get full(): boolean {
    return this.options.budgetBytes !== undefined && this.estimatedBytes >= this.options.budgetBytes;
  }

  get estimatedBytes(): number {
    return this.bytes;
  }

  /** Measures a cached user again after it changed. */
  private resize(state: UserState): void {
    if (this.states.get(state.userId) !== state) return;
    const size = this.sizeOf(state);
    this.bytes += size - state.cacheBytes;
    state.cacheBytes = size;
  }

  private forget(state: UserState): void {
    if (this.states.get(state.userId) !== state) return;
    this.states.delete(state.userId);
    this.bytes -= state.cacheBytes;
    state.cacheBytes = 0;
  }

  private async refreshLocked(state: UserState): Promise<UserState | null> {
    if (state.retired) return null;
    const changes = await this.store.changesSince(state.userId, state.nextSeq);
    if (changes.version === state.version) return state;
    // An update moves its memory to a new seq: a unit here whose id is known replaces that memory.
    const updated = changes.units.filter(({ record }) => state.records.has(record.id));
    const added = changes.units.length - updated.length;
    const appendsOnly = changes.count === state.records.size + added && changes.units.every((unit) => this.usable(unit));
    if (appendsOnly) {
      dropUnits(state, updated.map(({ record }) => ({ id: record.id, seq: state.records.get(record.id)!.seq })));
      admitUnits(state, changes.units.map(({ record, vector }) => ({ record, vector: vector! })));
      state.version = changes.version;
      if (changes.units.length > 0) this.options.lifecycle.markDirty(state);
      this.resize(state);
      this.enforceBudget(state);
      return state;
    }
    // Memories were deleted (or written by another model): start from the store again.
    this.retire(state);
    return null;
  }

  private async load(userId: string): Promise<UserState> {
    const snapshot = await this.store.load(userId);
    const state = emptyUserState(userId, snapshot.version);
    // Units of another model (or none) are served without a vector at once and re-embedded in
    // the background: a model change must not hold a user's first request for minutes.
    admitUnits(state, snapshot.units.map((unit) => ({ record: unit.record, vector: this.usable(unit) ? unit.vector : null })), { strings: new Map() });
    this.states.set(userId, state);
    // A user past the exhaustive limit reads its index now (smaller ones keep none).
    await this.options.lifecycle.attach(state);
    // Its vectors in int8 codes and its graph complete, the user holds none of the snapshot's
    // floats: 2 KB a memory given back now rather than at V8's next full collection.
    if (snapshot.release && state.corpus.vectorsCompact && state.corpus.vectorIndexComplete) snapshot.release();
    this.resize(state);
    this.enforceBudget(state);
    this.reembedding.schedule(state);
    return state;
  }

  private usable(unit: StoredUnit): boolean {
    return unit.vector !== null && unit.vector.length === this.options.dimensions && unit.record.model === this.options.modelId;
  }

  private touch(state: UserState): void {
    if (this.options.budgetBytes === undefined) return;
    this.states.delete(state.userId);
    this.states.set(state.userId, state);
  }

  /** Evicts the least recently used idle users until the estimate fits the budget (never `keep`). */
  private enforceBudget(keep: UserState): void {
    const budget = this.options.budgetBytes;
    if (budget === undefined) return;
    for (const state of this.states.values()) {
      if (this.bytes <= budget) return;
      if (state === keep || state.lock.busy) continue;
      this.evict(state);
    }
  }

  /** Writes a pending index cache first: an evicted user comes back without a rebuild. */
  private evict(state: UserState): void {
    this.forget(state);
    const eviction = state.lock
      .run(async () => {
        await this.options.lifecycle.flush(state);
        this.retire(state);
      })
      .catch((error) => {
        this.retire(state);
        this.options.logger.warn({ err: errorMessage(error) }, 'index cache flush failed at eviction; rebuilt on the next load');
      })
      .finally(() => this.evictions.delete(eviction));
    this.evictions.add(eviction);
  }

  /** Resolves once the evictions under way have written their index caches. */
  async evictionsSettled(): Promise<void> {
    await Promise.all([...this.evictions]);
  }
}
