import type { Embedder } from '../embedding/embedder.js';
import { createError, isAppError } from '../errors.js';
import { denseText } from '../ingest/message-units.js';
import { silentLogger, type Logger } from '../logger.js';
import { resolveWeights, type RetrievalWeights } from '../retrieval/retrieval-config.js';
import type { CorpusUnit } from '../retrieval/corpus/corpus-types.js';
import type { MemoryStore } from '../store/memory-store.js';
import { ArrivalOrder } from './arrival-order.js';
import { IndexLifecycle } from './index-lifecycle.js';
import { errorMessage, hitContent, matchesFilter, publicMemory, unitText } from './memory-records.js';
import { UserCache } from './user-cache.js';
import { cacheStats, poolStats, type PoolStats } from './pool-stats.js';
import { exportRecords, exportUnits, importRecords, type ExportedUnit, type PortableRecord } from './portability.js';
import { APPEND, type ServiceContext } from './service-context.js';
import type { UserState } from './user-state.js';
import { boundSearchRequest } from './query-bounds.js';
import { planQuery, queryTexts, type SearchOverrides } from './query-plan.js';
import { conversationDraft, conversationUnits, memoryDraft, memoryUnit } from './write-drafts.js';
import type { Memory, MemoryFilter, MemoryVersion } from '../domain/memory.js';
import type {
  AddOutcome,
  ConversationAdd,
  ListRequest,
  MemoryUpdate,
  NewMemory,
  SearchHit,
  SearchRequest,
} from './types.js';

const INDEX_FLUSH_DELAY_MS = 2_000;
/** How long after the start the background loading of users waits (ms): the first requests come first. */
const WARM_UP_DELAY_MS = 1_000;

export interface MemoryServiceOptions {
  /** Where the memories live (chosen by src/open-service.ts: the JSONL data directory or PostgreSQL). */
  store: MemoryStore;
  embedder: Embedder;
  logger?: Logger;
  /** Load every user at open (the server); the CLI loads only the users it touches. */
  preload?: boolean;
  weights?: Partial<RetrievalWeights>;
  /** Flush index caches this long after the last write (ms); 0 flushes only on close. */
  indexFlushDelayMs?: number;
  /** Estimated bytes the cached users may take; unset keeps every loaded user. */
  cacheBytes?: number;
}


/**
 * The one API that HTTP, /invoke, the CLI and eval call. It orders every write: embed outside
 * any lock or transaction, then under the user's lock write to the store (which assigns seqs,
 * checks request ids and returns only once durable) and only then update the cached user, so
 * a returned write is both durable and searchable. Reads first bring the cached user up to the
 * store's version, so a write acknowledged by another replica is seen too.
 */
export class MemoryService {
  readonly embedder: Embedder;
  readonly store: MemoryStore;
  private readonly logger: Logger;
  private readonly weights: RetrievalWeights;
  private readonly lifecycle: IndexLifecycle;
  private readonly cache: UserCache;
  /** What the service's parts (portability, stats) work through. */
  private readonly context: ServiceContext;
  private readonly pendingAdds = new Map<string, Promise<AddOutcome>>();
  private readonly arrivals = new ArrivalOrder();
  private readonly preload: boolean;
  private inFlight = 0;
  /** Memories stored, as of the last count plus this service's own writes since. */
  private total = 0;
  private background: Promise<void> = Promise.resolve();
  private drained: (() => void) | null = null;
  private counting: Promise<number> | null = null;
  /** Ends the background loading's current pause (on close). */
  private wakeWarmUp: (() => void) | null = null;
  private closing = false;

  private constructor(options: MemoryServiceOptions) {
    this.embedder = options.embedder;
    this.logger = options.logger ?? silentLogger();
    this.store = options.store;
    this.weights = resolveWeights(options.weights);
    this.preload = options.preload ?? true;
    this.lifecycle = new IndexLifecycle({
      cache: this.store.indexCache,
      modelId: this.embedder.modelId,
      dimensions: this.embedder.dimensions,
      exhaustiveLimit: this.weights.exhaustiveLimit,
      flushDelayMs: options.indexFlushDelayMs ?? INDEX_FLUSH_DELAY_MS,
      logger: this.logger,
    });
    this.cache = new UserCache({
      store: this.store,
      lifecycle: this.lifecycle,
      modelId: this.embedder.modelId,
      dimensions: this.embedder.dimensions,
      reembed: (records) => this.embed(records.map((record) => denseText(unitText(record))), 'ingest', records[0]?.user_id),
      budgetBytes: options.cacheBytes,
      logger: this.logger,
    });
    this.context = {
      store: this.store,
      cache: this.cache,
      embedder: this.embedder,
      weights: this.weights,
      existingUser: (userId) => this.existingUser(userId),
      underLock: (userId, task, options) => this.underLock(userId, task, options),
      embed: (texts, priority, key) => this.embed(texts, priority, key),
      counted: (delta) => {
        this.total += delta;
      },
    };
  }

  static async open(options: MemoryServiceOptions): Promise<MemoryService> {
    const service = new MemoryService(options);
    // The model loads on the encoder's thread meanwhile.
    await Promise.all([service.store.init(), service.embedder.ready()]);
    // Serving starts at once: a request loads its own user; counting and loading the others wait
    // (see warmUp), so that nothing the start does scales with the size of the pool.
    if (service.preload) service.background = service.warmUp();
    return service;
  }

  /**
   * Counts the pool and loads users (up to the cache budget), one at a time, after the first
   * requests have had the process to themselves: a request needs only its own user, and the
   * loads here would otherwise hold the event loop while it waits. Searches score exhaustively
   * until a user's index is complete.
   */
  private async warmUp(): Promise<void> {
    try {
      await this.idleFor(WARM_UP_DELAY_MS);
      if (this.closing) return;
      await this.memoryCount();
      for (const userId of await this.store.listUsers()) {
        await this.idleFor(0);
        if (this.closing || this.cache.full) return;
        const state = await this.cache.get(userId);
        await this.lifecycle.attachAll([state]);
      }
    } catch (error) {
      this.logger.error({ err: errorMessage(error) }, 'loading users in the background failed; they load on first use');
    }
  }

  /** Waits `ms`, then until no request is in flight (checked every WARM_UP_DELAY_MS / 10); at once when closing. */
  private async idleFor(ms: number): Promise<void> {
    const pause = (wait: number): Promise<void> =>
      new Promise((resolve) => {
        const timer = setTimeout(() => {
          this.wakeWarmUp = null;
          resolve();
        }, wait);
        this.wakeWarmUp = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    await pause(ms);
    while (this.inFlight > 0 && !this.closing) await pause(WARM_UP_DELAY_MS / 10);
  }

  /** Where the data lives (a directory, or the database URL without its password). */
  get dataDir(): string {
    return this.store.location;
  }

  /**
   * Memories stored in all, every user loaded or not, other replicas' writes included. Callers
   * arriving while a count runs share it: on a large pool the first count reads every user's
   * header, and a health probe polling meanwhile must not start one more each time.
   */
  memoryCount(): Promise<number> {
    this.counting ??= this.store
      .countMemories()
      .then((total) => (this.total = total))
      .finally(() => (this.counting = null));
    return this.counting;
  }

  /** Memories stored, as this service last knew it (0 until the start's background count; exact for a JSONL pool after it). */
  get count(): number {
    return this.total;
  }

  /** Users with at least one memory stored, every user loaded or not, without loading anyone. */
  userCount(): Promise<number> {
    return this.store.countUsers();
  }

  /** Users held here whose HNSW index is still being read, rebuilt or filled (they score exhaustively meanwhile). */
  indexesInProgress(): number {
    return this.cache.loaded.filter((state) => state.records.size > 0 && state.corpus.vectors !== null && !state.corpus.vectorIndexComplete).length;
  }

  async addMemory(input: NewMemory): Promise<Memory> {
    return this.track(async () => {
      const unit = memoryUnit(input, Date.now());
      const [vector] = await this.embed([denseText(unit)], 'ingest', input.userId);
      const draft = memoryDraft(input, unit, vector, this.embedder.modelId);
      return this.underLock(
        input.userId,
        async (state) => {
          const result = (await this.store.append(input.userId, [draft]))!;
          this.total += 1;
          this.cache.applyAppend(state, result, [vector]);
          return publicMemory(result.records[0]);
        },
        APPEND,
      );
    });
  }

  /**
   * Stores an evaluation-platform Add. Idempotent on (request_id, user_id): a repeat, even one
   * racing the first or arriving after a restart, stores nothing and reports `stored: false`;
   * the first body wins.
   */
  async addConversation(input: ConversationAdd): Promise<AddOutcome> {
    const key = JSON.stringify([input.userId, input.requestId]);
    const pending = this.pendingAdds.get(key);
    if (pending) {
      await pending.catch(() => undefined);
      // The first attempt failed: this one is a retry in its own right.
      if (!this.pendingAdds.has(key)) return this.addConversation(input);
      return { stored: false, units: 0 };
    }
    const attempt = this.track(() => this.storeConversation(input));
    this.pendingAdds.set(key, attempt);
    try {
      return await attempt;
    } finally {
      this.pendingAdds.delete(key);
    }
  }

  async search(unbounded: SearchRequest, overrides: SearchOverrides = {}): Promise<SearchHit[]> {
    const request = boundSearchRequest(unbounded);
    return this.track(async () => {
      const texts = queryTexts(request);
      const encode = () => {
        const vectors = this.embed(texts.map((text) => (text.trim() === '' ? '?' : text)), 'query', request.userId);
        vectors.catch(() => undefined);
        return vectors;
      };
      // The encoder works while this thread does the rest. For a user held here with memories it
      // starts even before the freshness check (with PostgreSQL, a round trip); any other user is
      // checked first, so that searching an unknown user costs no encoder time.
      let encoding = (this.cache.peek(request.userId)?.records.size ?? 0) > 0 ? encode() : null;
      const state = await this.existingUser(request.userId);
      if (!state || state.records.size === 0) return [];
      encoding ??= encode();
      const plan = planQuery(request, texts, state.corpus, this.weights, overrides);
      const prepared = state.corpus.prepare({ ...plan.query, filter: recordFilter(state, request.filter) }, plan.weights);
      // A write that lands while the vectors are computed is seen: `rank` redoes what it changed.
      const ranked = state.corpus.rank(prepared, await encoding, request.limit);
      const hits: SearchHit[] = [];
      for (const { seq, score, explanation, duplicates } of ranked) {
        const record = state.bySeq.get(seq);
        if (!record) continue;
        const hit: SearchHit = { memory: publicMemory(record), content: hitContent(record), score: roundScore(score) };
        if (explanation) hit.explanation = explanation;
        if (duplicates !== undefined) hit.duplicates = duplicates;
        hits.push(hit);
      }
      return hits;
    });
  }


  /** Newest first. */
  async list(request: ListRequest): Promise<Memory[]> {
    const state = await this.existingUser(request.userId);
    if (!state) return [];
    const out: Memory[] = [];
    const seqs = [...state.bySeq.keys()].sort((a, b) => b - a);
    for (const seq of seqs) {
      const record = state.bySeq.get(seq)!;
      if (request.filter && !matchesFilter(record, request.filter)) continue;
      out.push(publicMemory(record));
      if (out.length >= request.limit) break;
    }
    return out;
  }

  async get(userId: string, id: string): Promise<Memory> {
    const record = (await this.existingUser(userId))?.records.get(id);
    if (!record) throw notFound(id);
    return publicMemory(record);
  }

  /**
   * Replaces a memory by its next version: same id, version + 1. A new text is embedded first
   * (outside the lock, like an Add) and the memory is re-indexed before this returns, so from
   * the answer on searches find the new text and never the old one.
   */
  async updateMemory(input: MemoryUpdate): Promise<Memory> {
    return this.track(async () => {
      const state = await this.existingUser(input.userId);
      const current = state?.records.get(input.id);
      if (!current) throw notFound(input.id);
      const text = input.text?.trim();
      // Any text given is embedded, even one equal to what this replica holds: another writer may
      // change the text meanwhile, and the stored vector must be the stored text's.
      const [vector] = text !== undefined ? await this.embed([denseText({ ...unitText(current), text })], 'ingest', input.userId) : [];
      return this.underLock(input.userId, async (locked) => {
        const result = await this.store.update(input.userId, input.id, {
          text,
          tags: input.tags,
          importance: input.importance,
          metadata: input.metadata,
          updatedAt: new Date().toISOString(),
          ...(vector ? { vector, model: this.embedder.modelId } : {}),
        });
        if (!result) throw notFound(input.id);
        this.cache.applyUpdate(locked, result, vector);
        return publicMemory(result.record);
      });
    });
  }

  /** Every version of a memory, oldest first, the current one last. */
  async history(userId: string, id: string): Promise<{ id: string; versions: MemoryVersion[] }> {
    const record = (await this.existingUser(userId))?.records.get(id);
    if (!record) throw notFound(id);
    const { version, text, tags, importance, metadata, updated_at } = publicMemory(record);
    const earlier = version > 1 ? await this.store.history(userId, id) : [];
    return { id, versions: [...earlier.filter((entry) => entry.version < version), { version, text, tags, importance, metadata, updated_at }] };
  }

  /** Deletes one memory: the store drops it (the JSONL store rewrites only its owner's file), then every index does. */
  async delete(userId: string, id: string): Promise<void> {
    await this.track(async () => {
      const state = await this.existingUser(userId);
      if (!state?.records.has(id)) throw notFound(id);
      await this.underLock(userId, async (current) => {
        const result = await this.store.remove(userId, [id]);
        if (result.removed.length === 0) throw notFound(id);
        this.total -= 1;
        this.cache.applyRemove(current, result);
      });
    });
  }

  /** Removes everything stored for a user, files included. Returns how many memories it held. */
  async deleteUser(userId: string): Promise<number> {
    return this.track(() =>
      this.underLock(
        userId,
        async (state) => {
          const count = await this.store.deleteUser(userId);
          this.total = Math.max(0, this.total - count);
          this.cache.retire(state);
          return count;
        },
        { attachIndex: false },
      ),
    );
  }

  /** Every unit of a user with the texts and vector the service searches (for eval's peers, export); waits for a re-embedding under way. */
  exportUnits(userId: string): Promise<ExportedUnit[]> {
    return exportUnits(this.context, userId);
  }

  /** A user's memories as portable records (see portability.ts). */
  exportRecords(userId: string): Promise<PortableRecord[]> {
    return exportRecords(this.context, userId);
  }

  /** Imports portable records: ids the user holds are skipped; vectors of another model are re-embedded. */
  importRecords(records: readonly PortableRecord[], onProgress?: (done: number) => void): Promise<{ imported: number; skipped: number; reembedded: number }> {
    return this.track(() => importRecords(this.context, records, onProgress));
  }


  /** Deletes every memory stored (ingested) before the cutoff; returns how many went. */
  async purgeOlderThan(cutoffMs: number): Promise<number> {
    return this.track(async () => {
      let purged = 0;
      for (const userId of await this.store.listUsers()) {
        if (!this.cache.peek(userId)) {
          // Not cached here: the store alone; a replica holding the user sees the new version.
          const removed = (await this.store.removeOlderThan(userId, cutoffMs)).removed.length;
          this.total -= removed;
          purged += removed;
          continue;
        }
        await this.underLock(
          userId,
          async (state) => {
            const result = await this.store.removeOlderThan(userId, cutoffMs);
            this.cache.applyRemove(state, result);
            this.total -= result.removed.length;
            purged += result.removed.length;
          },
          { attachIndex: false },
        );
      }
      return purged;
    });
  }

  async listUsers(): Promise<string[]> {
    return this.store.listUsers();
  }

  /** Per-user figures without loading anyone (see pool-stats.ts). */
  stats(): Promise<PoolStats> {
    return poolStats(this.context);
  }


  /** Stops new work, waits for work in flight, writes the index caches. */
  async close(): Promise<void> {
    this.closing = true;
    this.lifecycle.closing = true;
    this.wakeWarmUp?.();
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    await this.background;
    await this.cache.stopReembedding();
    await this.cache.evictionsSettled();
    // The acknowledged writes' HNSW inserts finish first, so the saved indexes are complete.
    await Promise.all(this.cache.loaded.map((state) => state.indexCompletion));
    for (const state of this.cache.loaded) {
      await this.lifecycle.flush(state).catch((error) => this.logger.error({ err: errorMessage(error) }, 'index flush failed at close'));
    }
    await this.store.close();
  }

  cacheStats(): PoolStats['cache'] {
    return cacheStats(this.cache);
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** Resolves once the start's background loading is done and every loaded user's HNSW index is complete. */
  async indexesReady(): Promise<void> {
    await this.background;
    await Promise.all(this.cache.loaded.map((state) => state.indexCompletion));
  }

  /** Resolves once every user loaded so far has all its memories embedded by the current model (see BackgroundReembedding). */
  reembeddingSettled(): Promise<void> {
    return this.cache.reembeddingSettled();
  }

  /** Writes every pending index cache now (otherwise done a moment after the last write), once the inserts in the background are done. */
  async flushIndexes(): Promise<void> {
    await Promise.all(this.cache.loaded.map((state) => state.indexCompletion));
    for (const state of this.cache.loaded) if (state.indexDirty) await this.lifecycle.flush(state);
  }

  private async storeConversation(input: ConversationAdd): Promise<AddOutcome> {
    // Before any await: the place in line is the order this Add arrived in, and so is its time
    // (the date of messages without a timestamp), so a session's undated turns keep their order.
    const receivedAt = Date.now();
    const place = this.arrivals.enter(input.userId);
    try {
      return await this.storeConversationInTurn(input, place.turn, receivedAt);
    } finally {
      place.leave();
    }
  }

  private async storeConversationInTurn(input: ConversationAdd, turn: Promise<void>, receivedAt: number): Promise<AddOutcome> {
    const known = await this.cache.get(input.userId);
    if (known.requestIds.has(input.requestId) || (await this.store.hasRequest(input.userId, input.requestId))) return { stored: false, units: 0 };
    const drafts = conversationUnits(input, receivedAt);
    const vectors = await this.embed(drafts.map((draft) => denseText(draft.unit)), 'ingest', input.userId);
    const units = drafts.map((draft, i) => conversationDraft(input, draft, receivedAt, vectors[i], this.embedder.modelId));
    await turn;
    return this.underLock(input.userId, async (state) => {
      if (state.requestIds.has(input.requestId)) return { stored: false, units: 0 };
      // The store checks the request id in the same write: of two replicas racing, the first wins.
      const result = await this.store.append(input.userId, units, { requestId: input.requestId });
      if (!result) {
        state.requestIds.add(input.requestId);
        return { stored: false, units: 0 };
      }
      this.total += result.records.length;
      this.cache.applyAppend(state, result, vectors);
      return { stored: true, units: result.records.length };
    }, APPEND);
  }

  /** Runs a write under the user's lock, starting over if the cached user was retired meanwhile. */
  private async underLock<T>(userId: string, task: (state: UserState) => Promise<T>, options: { attachIndex?: boolean } = {}): Promise<T> {
    for (;;) {
      const current = await this.cache.get(userId);
      const result = await current.lock.run(async () => {
        if (current.retired) return undefined;
        if (options.attachIndex !== false) await this.lifecycle.attach(current);
        return { value: await task(current) };
      });
      if (result) return result.value;
    }
  }

  /** The user as stored now, or null for one that has nothing stored. */
  private async existingUser(userId: string): Promise<UserState | null> {
    const state = await this.cache.fresh(userId);
    if (state.records.size > 0) return state;
    // Nothing stored: keep no state, so requests for made-up ids do not fill the cache.
    if (!state.lock.busy) this.cache.retire(state);
    return null;
  }

  /** `key` (the user id) lets the embedder serve users fairly: one user's flood does not delay the others. */
  private async embed(texts: string[], priority: 'query' | 'ingest' = 'ingest', key?: string): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    try {
      return await this.embedder.embed(texts, { priority, key });
    } catch (error) {
      if (isAppError(error)) throw error;
      throw createError('EMBEDDER_UNAVAILABLE', `Embedder failed: ${errorMessage(error)}`, { cause: error });
    }
  }

  /** Counts work in flight so that close() can wait for it; refuses new work once closing. */
  private async track<T>(work: () => Promise<T>): Promise<T> {
    if (this.closing) throw createError('SHUTTING_DOWN');
    this.inFlight++;
    try {
      return await work();
    } finally {
      this.inFlight--;
      if (this.inFlight === 0 && this.drained) {
        this.drained();
        this.drained = null;
      }
    }
  }
}

function notFound(id: string): Error {
  return createError('NOT_FOUND', `No memory with id ${JSON.stringify(id)}`);
}

/** The request's filter as the corpus applies it (on its units, whose time is parsed already), or none. */
function recordFilter(state: UserState, filter: MemoryFilter | undefined): ((unit: CorpusUnit) => boolean) | undefined {
  if (!filter || (filter.tag === undefined && filter.metadata === undefined && filter.sinceMs === undefined && filter.untilMs === undefined)) return undefined;
  return (unit) => {
    const record = state.bySeq.get(unit.seq);
    return record !== undefined && matchesFilter(record, filter, unit.timeMs);
  };
}

function roundScore(score: number): number {
  return Math.round(score * 1e6) / 1e6;
}
