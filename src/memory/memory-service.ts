import type { Embedder } from '../embedding/embedder.js';
import { createError, isAppError } from '../errors.js';
import { denseText, lexicalText } from '../ingest/message-units.js';
import { silentLogger, type Logger } from '../logger.js';
import { resolveWeights, type RetrievalWeights } from '../retrieval/retrieval-config.js';
import type { CorpusUnit } from '../retrieval/user-corpus.js';
import type { MemoryStore, UnitDraft } from '../store/memory-store.js';
import { decodeVector, encodeVector } from '../store/stored-record.js';
import { ArrivalOrder } from './arrival-order.js';
import { IndexLifecycle } from './index-lifecycle.js';
import { errorMessage, hitContent, matchesFilter, publicMemory, unitText } from './memory-records.js';
import { UserCache } from './user-cache.js';
import { inStoredOrder, type UserState } from './user-state.js';
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
/**
 * Appends do not wait for the HNSW index: it is attached and filled after the acknowledgement
 * (`UserCache.applyAppend`), and the units are searchable at once by exhaustive scoring.
 */
const APPEND = { attachIndex: false } as const;

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

/** A unit as the peers in eval/ get it: the same texts and the same vector the service uses. */
export interface ExportedUnit {
  memory: Memory;
  lexicalText: string;
  denseText: string;
  vector: Float32Array;
}

/** One line of `memorypool export`: a memory, the versions it replaced, its vector and the model that produced it. */
export type PortableRecord = Omit<Memory, 'version' | 'updated_at' | 'metadata'> &
  Partial<Pick<Memory, 'version' | 'updated_at' | 'metadata'>> & { history?: MemoryVersion[]; vec?: string; model?: string };

export interface PoolStats {
  count: number;
  users: number;
  /** `reembedding`: memories held here still waiting for a vector of this model (see BackgroundReembedding). */
  embedder: { model: string; dimensions: number; reembedding: number };
  /** This replica's in-memory users: how many, their estimated size and the budget (null: none). */
  cache: { users: number; estimated_bytes: number; budget_bytes: number | null };
  per_user: Array<{
    user_id: string;
    count: number;
    sessions: number;
    bytes_on_disk: number;
    /** Whether this process holds the user in memory (its cache; with several processes or replicas, each its own). */
    cached: boolean;
    /** `graph`: whether the user keeps an HNSW graph (only past the exhaustive limit); `complete`: it holds every memory (always, for a user that keeps none). */
    index: { graph: boolean; loaded: boolean; vectors: number; complete: boolean; pending_flush: boolean };
  }>;
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
  async exportUnits(userId: string): Promise<ExportedUnit[]> {
    if (!(await this.existingUser(userId))) return [];
    await this.cache.reembeddingSettled();
    const state = await this.existingUser(userId);
    if (!state) return [];
    return inStoredOrder(state).map((record) => {
      const text = unitText(record);
      return { memory: publicMemory(record), lexicalText: lexicalText(text), denseText: denseText(text), vector: state.corpus.vectorOf(record.seq)! };
    });
  }

  /**
   * A user's memories as portable records: the memory, its vector and the model that made it,
   * so an import into a pool with the same model needs no re-embedding.
   */
  async exportRecords(userId: string): Promise<PortableRecord[]> {
    const state = await this.existingUser(userId);
    if (!state) return [];
    const exact = state.corpus.vectorsCompact ? await this.storedVectors(userId) : null;
    const out: PortableRecord[] = [];
    for (const record of inStoredOrder(state)) {
      const history = (record.version ?? 1) > 1 ? await this.store.history(userId, record.id) : [];
      // A unit waiting to be re-embedded goes without a vector: the importing pool embeds it. So
      // does one the store no longer holds (deleted since): its import embeds it again.
      const vector = exact ? exact.get(record.seq) : state.corpus.vectorOf(record.seq);
      out.push({ ...publicMemory(record), ...(history.length > 0 ? { history } : {}), ...(vector ? { vec: encodeVector(vector), model: record.model } : {}) });
    }
    return out;
  }

  /**
   * The user's exact vectors by seq, read from the store: a user that keeps a graph holds only
   * int8 codes in memory (`UserCorpus.compactVectors`), and an export must carry what the store has.
   */
  private async storedVectors(userId: string): Promise<Map<number, Float32Array>> {
    const vectors = new Map<number, Float32Array>();
    for (const { record, vector } of (await this.store.load(userId)).units) {
      if (vector && record.model === this.embedder.modelId) vectors.set(record.seq, vector);
    }
    return vectors;
  }

  /**
   * Imports portable records (from `exportRecords`). Memories whose id the user already holds
   * are skipped, so an import can be repeated; vectors of another model are re-embedded.
   */
  async importRecords(records: readonly PortableRecord[], onProgress?: (done: number) => void): Promise<{ imported: number; skipped: number; reembedded: number }> {
    return this.track(async () => {
      const byUser = new Map<string, PortableRecord[]>();
      for (const record of records) {
        let list = byUser.get(record.user_id);
        if (!list) byUser.set(record.user_id, (list = []));
        list.push(record);
      }
      let imported = 0;
      let skipped = 0;
      let reembedded = 0;
      let done = 0;
      for (const [userId, list] of byUser) {
        for (let start = 0; start < list.length; start += 256) {
          const held = (await this.cache.fresh(userId)).records;
          const batch = list.slice(start, start + 256).filter((record) => {
            if (held.has(record.id)) skipped++;
            return !held.has(record.id);
          });
          const stale = batch.filter((record) => record.model !== this.embedder.modelId || record.vec === undefined);
          const fresh = await this.embed(stale.map((record) => denseText(unitText(record))));
          const vectorById = new Map(stale.map((record, i) => [record.id, fresh[i]]));
          reembedded += stale.length;
          await this.underLock(userId, async (current) => {
            const drafts: UnitDraft[] = batch
              .filter((record) => !current.records.has(record.id))
              .map(({ vec, model: _model, ...memory }) => ({ record: { ...memory, model: this.embedder.modelId }, vector: vectorById.get(memory.id) ?? decodeVector(vec!) }));
            const result = (await this.store.append(userId, drafts))!;
            this.total += drafts.length;
            this.cache.applyAppend(current, result, drafts.map(({ vector }) => vector));
            imported += drafts.length;
          }, APPEND);
          done += Math.min(256, list.length - start);
          onProgress?.(done);
        }
      }
      return { imported, skipped, reembedded };
    });
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

  /**
   * Per-user figures without loading anyone: users this replica holds come from memory (brought
   * up to date), the others from the store's counts, so a pool larger than the cache can be
   * described without evicting what is cached.
   */
  async stats(): Promise<PoolStats> {
    const perUser: PoolStats['per_user'] = [];
    let count = 0;
    for (const userId of await this.listUsers()) {
      const cached = this.cache.peek(userId) ? await this.existingUser(userId) : null;
      const figures = cached
        ? { count: cached.records.size, sessions: new Set([...cached.records.values()].map((record) => record.session_id).filter(Boolean)).size }
        : await this.store.userCounts(userId);
      if (figures.count === 0) continue;
      count += figures.count;
      perUser.push({
        user_id: userId,
        ...figures,
        bytes_on_disk: await this.store.storedBytes(userId),
        cached: cached !== null,
        index: indexStats(cached, figures.count > this.weights.exhaustiveLimit),
      });
    }
    return {
      count,
      users: perUser.length,
      embedder: {
        model: this.embedder.modelId,
        dimensions: this.embedder.dimensions,
        reembedding: this.cache.loaded.reduce((sum, state) => sum + state.corpus.unembeddedCount, 0),
      },
      cache: this.cacheStats(),
      per_user: perUser,
    };
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
    return { users: this.cache.loaded.length, estimated_bytes: this.cache.estimatedBytes, budget_bytes: this.cache.budgetBytes ?? null };
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

/** A user's index as /mem/stats shows it; `pastLimit`: it holds more memories than are scored exhaustively. */
function indexStats(state: UserState | null, pastLimit: boolean): PoolStats['per_user'][number]['index'] {
  const inMemory = state?.corpus.vectors ?? null;
  if (!inMemory) return { graph: pastLimit, loaded: false, vectors: 0, complete: !pastLimit, pending_flush: false };
  return { graph: true, loaded: true, vectors: inMemory.size, complete: state!.corpus.vectorIndexComplete, pending_flush: state!.indexDirty };
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
