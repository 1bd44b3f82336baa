import { randomUUID } from 'node:crypto';
import type { Embedder } from '../embedding/embedder.js';
import { createError, isAppError } from '../errors.js';
import { denseText, lexicalText, splitIntoUnits, standaloneContent, type UnitText } from '../ingest/message-units.js';
import { silentLogger, type Logger } from '../logger.js';
import { analyze, ANALYZER_VERSION } from '../retrieval/analyzer.js';
import { PLATFORM_SEARCH_OVERRIDES, resolveWeights, type RetrievalWeights } from '../retrieval/retrieval-config.js';
import { addressedRole, isDistractorQuestion, namedSpeaker } from '../retrieval/query-cues.js';
import { eventPeriod, hasTimeExpression, isWhenQuestion, namedPeriod } from '../retrieval/time-cues.js';
import { UserCorpus, type CorpusUnit, type PreparedText } from '../retrieval/user-corpus.js';
import { VectorIndex } from '../retrieval/vector-index.js';
import { JsonlStore } from '../store/jsonl-store.js';
import { decodeVector, encodeVector, type StoredRecord } from '../store/stored-record.js';
import { readVectorIndexCache, writeVectorIndexCache, type VectorIndexMeta } from '../store/vector-index-cache.js';
import { Mutex } from './mutex.js';
import type {
  AddOutcome,
  ConversationAdd,
  ListRequest,
  Memory,
  NewMemory,
  SearchHit,
  SearchRequest,
} from './types.js';

const INDEX_FLUSH_DELAY_MS = 2_000;
/** Vectors added to a rebuilding HNSW index per turn of the event loop (~50 ms of work). */
const INDEX_SLICE = 200;

export interface MemoryServiceOptions {
  dataDir: string;
  embedder: Embedder;
  logger?: Logger;
  /** Load every user at open (the server); the CLI loads only the users it touches. */
  preload?: boolean;
  weights?: Partial<RetrievalWeights>;
  /** Flush index caches this long after the last write (ms); 0 flushes only on close. */
  indexFlushDelayMs?: number;
}

export interface SearchOverrides {
  weights?: Partial<RetrievalWeights>;
}

/** A unit as the peers in eval/ get it: the same texts and the same vector the service uses. */
export interface ExportedUnit {
  memory: Memory;
  lexicalText: string;
  denseText: string;
  vector: Float32Array;
}

/** One line of `memorypool export`: a memory plus its vector and the model that produced it. */
export type PortableRecord = Memory & { vec?: string; model?: string };

export interface PoolStats {
  count: number;
  users: number;
  embedder: { model: string; dimensions: number };
  per_user: Array<{
    user_id: string;
    count: number;
    sessions: number;
    bytes_on_disk: number;
    index: { loaded: boolean; vectors: number; complete: boolean; pending_flush: boolean };
  }>;
}

interface UserState {
  userId: string;
  lock: Mutex;
  records: Map<string, StoredRecord>;
  bySeq: Map<number, StoredRecord>;
  requestIds: Set<string>;
  corpus: UserCorpus;
  nextSeq: number;
  indexDirty: boolean;
  flushTimer: NodeJS.Timeout | null;
  /** Set when the user was deleted; a writer holding this state starts over. */
  deleted: boolean;
  /** Settles when a background fill of the HNSW index has finished. */
  indexCompletion: Promise<void>;
  /** Set when the index file was checked current at the start and left on disk (not in memory). */
  indexOnDisk: { vectors: number } | null;
}

/**
 * The one API that HTTP, /invoke, the CLI and eval call. It orders every write: embed outside
 * the lock, then under the user's lock append to the JSONL (fsync) and only then update the
 * in-memory indexes, so a returned write is both durable and searchable.
 */
export class MemoryService {
  readonly embedder: Embedder;
  private readonly store: JsonlStore;
  private readonly logger: Logger;
  private readonly weights: RetrievalWeights;
  private readonly flushDelayMs: number;
  private readonly users = new Map<string, UserState>();
  private readonly loading = new Map<string, Promise<UserState>>();
  private readonly pendingAdds = new Map<string, Promise<AddOutcome>>();
  private readonly preload: boolean;
  private inFlight = 0;
  private backgroundIndexing: Promise<void> = Promise.resolve();
  private drained: (() => void) | null = null;
  private closing = false;

  private constructor(options: MemoryServiceOptions) {
    this.embedder = options.embedder;
    this.logger = options.logger ?? silentLogger();
    this.store = new JsonlStore(options.dataDir, this.logger);
    this.weights = resolveWeights(options.weights);
    this.flushDelayMs = options.indexFlushDelayMs ?? INDEX_FLUSH_DELAY_MS;
    this.preload = options.preload ?? true;
  }

  static async open(options: MemoryServiceOptions): Promise<MemoryService> {
    const service = new MemoryService(options);
    await service.store.init();
    await service.embedder.ready();
    if (service.preload) {
      for (const userId of await service.store.listUsers()) await service.user(userId);
      // Indexes are read, checked and rebuilt where needed after the start, not before it:
      // searches score exhaustively until a user's index is complete.
      service.backgroundIndexing = service.attachAllVectorIndexes();
    }
    return service;
  }

  get dataDir(): string {
    return this.store.dataDir;
  }

  /** Memories held in loaded users (all users when preloaded). */
  get count(): number {
    let total = 0;
    for (const state of this.users.values()) total += state.records.size;
    return total;
  }

  async addMemory(input: NewMemory): Promise<Memory> {
    return this.track(async () => {
      const now = Date.now();
      const unit: UnitText = { text: input.text.trim(), timeMs: now, tags: input.tags };
      const [vector] = await this.embed([denseText(unit)]);
      const state = await this.user(input.userId);
      return this.underLock(input.userId, state, async (current) => {
        const record: StoredRecord = {
          id: randomUUID(),
          user_id: input.userId,
          text: unit.text,
          tags: input.tags ?? [],
          importance: input.importance ?? 0.5,
          source: input.source ?? 'cli',
          created_at: new Date(now).toISOString(),
          seq: current.nextSeq,
          vec: encodeVector(vector),
          model: this.embedder.modelId,
        };
        await this.store.append(input.userId, [record]);
        this.admit(current, [{ record, vector }]);
        return publicMemory(record);
      });
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

  async search(request: SearchRequest, overrides: SearchOverrides = {}): Promise<SearchHit[]> {
    return this.track(async () => {
      const state = await this.existingUser(request.userId);
      if (!state || state.records.size === 0) return [];
      const profile = request.profile === 'platform' ? PLATFORM_SEARCH_OVERRIDES : undefined;
      const weights = overrides.weights || profile ? resolveWeights({ ...this.weights, ...profile, ...overrides.weights }) : this.weights;
      const options = (request.options ?? []).map((option) => option.trim()).filter((option) => option !== '');
      const texts = [request.query.trim() || request.query, ...options];
      const vectors = await this.embed(texts.map((text) => (text.trim() === '' ? '?' : text)), 'query');
      const prepared: PreparedText[] = texts.map((text, i) => ({ terms: analyze(text), vector: vectors[i] }));
      const wantedTags = new Set(request.query.toLowerCase().match(/[\p{L}\p{N}_-]+/gu) ?? []);
      if (request.tag) wantedTags.add(request.tag.toLowerCase());
      const tag = request.tag;
      const ranked = state.corpus.search(
        {
          main: prepared[0],
          options: prepared.slice(1),
          speaker: namedSpeaker(request.query, state.corpus.speakers),
          role: addressedRole(request.query, state.corpus.speakers),
          wantedTags,
          whenQuestion: isWhenQuestion(request.query),
          period: namedPeriod(request.query, new Date(state.corpus.newestTimeMs)),
          filter: tag === undefined ? undefined : (seq) => state.bySeq.get(seq)?.tags.includes(tag) ?? false,
          explain: request.explain === true,
        },
        weights,
        request.limit,
      );
      const hits: SearchHit[] = [];
      for (const { seq, score, explanation } of ranked) {
        const record = state.bySeq.get(seq);
        if (!record) continue;
        const hit: SearchHit = { memory: publicMemory(record), content: hitContent(record), score: roundScore(score) };
        if (explanation) hit.explanation = explanation;
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
      if (request.tag !== undefined && !record.tags.includes(request.tag)) continue;
      out.push(publicMemory(record));
      if (out.length >= request.limit) break;
    }
    return out;
  }

  async get(userId: string, id: string): Promise<Memory> {
    const record = (await this.existingUser(userId))?.records.get(id);
    if (!record) throw createError('NOT_FOUND', `No memory with id ${JSON.stringify(id)}`);
    return publicMemory(record);
  }

  /** Deletes one memory: rewrites only its owner's file, then drops it from every index. */
  async delete(userId: string, id: string): Promise<void> {
    await this.track(async () => {
      const state = await this.existingUser(userId);
      if (!state?.records.has(id)) throw createError('NOT_FOUND', `No memory with id ${JSON.stringify(id)}`);
      await this.underLock(userId, state, async (current) => {
        if (!current.records.has(id)) throw createError('NOT_FOUND', `No memory with id ${JSON.stringify(id)}`);
        await this.removeRecords(current, new Set([id]));
      });
    });
  }

  /** Removes everything stored for a user, files included. Returns how many memories it held. */
  async deleteUser(userId: string): Promise<number> {
    return this.track(async () => {
      const state = await this.user(userId);
      return state.lock.run(async () => {
        const count = state.records.size;
        if (state.flushTimer) clearTimeout(state.flushTimer);
        state.flushTimer = null;
        state.deleted = true;
        this.users.delete(userId);
        await this.store.deleteUser(userId);
        return count;
      });
    });
  }

  /** Every unit of a user with the texts and vector the service searches (for eval's peers, export). */
  async exportUnits(userId: string): Promise<ExportedUnit[]> {
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
    return inStoredOrder(state).map((record) => ({ ...publicMemory(record), vec: withVector(state, record).vec, model: record.model }));
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
        const state = await this.user(userId);
        for (let start = 0; start < list.length; start += 256) {
          const batch = list.slice(start, start + 256).filter((record) => {
            if (state.records.has(record.id)) skipped++;
            return !state.records.has(record.id);
          });
          const stale = batch.filter((record) => record.model !== this.embedder.modelId || record.vec === undefined);
          const fresh = await this.embed(stale.map((record) => denseText(unitText(record))));
          const vectorById = new Map(stale.map((record, i) => [record.id, fresh[i]]));
          reembedded += stale.length;
          await this.underLock(userId, state, async (current) => {
            const admitted = batch
              .filter((record) => !current.records.has(record.id))
              .map((record, i) => {
                const vector = vectorById.get(record.id) ?? decodeVector(record.vec!);
                const stored: StoredRecord = { ...record, seq: current.nextSeq + i, vec: encodeVector(vector), model: this.embedder.modelId };
                return { record: stored, vector };
              });
            await this.store.append(userId, admitted.map(({ record }) => record));
            this.admit(current, admitted);
            imported += admitted.length;
          });
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
      for (const userId of await this.listUsers()) {
        const state = await this.existingUser(userId);
        if (!state) continue;
        await this.underLock(userId, state, async (current) => {
          const expired = [...current.records.values()].filter((record) => Date.parse(record.created_at) < cutoffMs);
          if (expired.length === 0) return;
          await this.removeRecords(current, new Set(expired.map((record) => record.id)));
          purged += expired.length;
        });
      }
      return purged;
    });
  }

  async listUsers(): Promise<string[]> {
    if (this.preload) return [...this.users.keys()].sort();
    return this.store.listUsers();
  }

  async stats(): Promise<PoolStats> {
    const userIds = await this.listUsers();
    const perUser: PoolStats['per_user'] = [];
    let count = 0;
    for (const userId of userIds) {
      const state = await this.existingUser(userId);
      if (!state) continue;
      const usage = await this.store.diskUsage(userId);
      const sessions = new Set([...state.records.values()].map((record) => record.session_id).filter(Boolean));
      count += state.records.size;
      perUser.push({
        user_id: userId,
        count: state.records.size,
        sessions: sessions.size,
        bytes_on_disk: Object.values(usage).reduce((sum, size) => sum + size, 0),
        index: indexStats(state),
      });
    }
    return {
      count,
      users: perUser.length,
      embedder: { model: this.embedder.modelId, dimensions: this.embedder.dimensions },
      per_user: perUser,
    };
  }

  /** Stops new work, waits for work in flight, writes the index caches. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.inFlight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
    await this.backgroundIndexing;
    for (const state of this.users.values()) {
      if (state.flushTimer) clearTimeout(state.flushTimer);
      state.flushTimer = null;
      // Always through the lock: a timer's flush may be writing right now with the flag already cleared.
      await this.flushIndex(state).catch((error) => this.logger.error({ err: errorMessage(error) }, 'index flush failed at close'));
    }
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /** Resolves once every loaded user's HNSW index is attached and complete (the start's background work). */
  async indexesReady(): Promise<void> {
    await this.backgroundIndexing;
    await Promise.all([...this.users.values()].map((state) => state.indexCompletion));
  }

  /** Writes every pending index cache now (otherwise done a moment after the last write). */
  async flushIndexes(): Promise<void> {
    for (const state of this.users.values()) if (state.indexDirty) await this.flushIndex(state);
  }

  private async storeConversation(input: ConversationAdd): Promise<AddOutcome> {
    const known = await this.user(input.userId);
    if (known.requestIds.has(input.requestId)) return { stored: false, units: 0 };
    const receivedAt = Date.now();
    const drafts: Array<{ unit: UnitText; messageIndex: number; part: number; parts: number }> = [];
    input.messages.forEach((message, messageIndex) => {
      const timeMs = message.timestamp ?? receivedAt;
      const parts = splitIntoUnits(message.content);
      parts.forEach((text, part) => drafts.push({ unit: { text, role: message.role.trim(), timeMs }, messageIndex, part, parts: parts.length }));
    });
    const vectors = await this.embed(drafts.map((draft) => denseText(draft.unit)));
    const state = await this.user(input.userId);
    return this.underLock(input.userId, state, async (current) => {
      if (current.requestIds.has(input.requestId)) return { stored: false, units: 0 };
      const createdAt = new Date(receivedAt).toISOString();
      const admitted = drafts.map((draft, i) => {
        const record: StoredRecord = {
          id: randomUUID(),
          user_id: input.userId,
          text: draft.unit.text,
          tags: [],
          importance: 0.5,
          source: 'add',
          created_at: createdAt,
          session_id: input.sessionId,
          role: draft.unit.role,
          occurred_at: new Date(draft.unit.timeMs).toISOString(),
          request_id: input.requestId,
          message_index: draft.messageIndex,
          ...(draft.parts > 1 ? { part: draft.part, parts: draft.parts } : {}),
          seq: current.nextSeq + i,
          batch: drafts.length,
          vec: encodeVector(vectors[i]),
          model: this.embedder.modelId,
        };
        return { record, vector: vectors[i] };
      });
      await this.store.append(input.userId, admitted.map(({ record }) => record));
      this.admit(current, admitted);
      return { stored: true, units: admitted.length };
    });
  }

  /** Under the user's lock: rewrites the user's file without these memories, then drops them from every index. */
  private async removeRecords(state: UserState, ids: ReadonlySet<string>): Promise<void> {
    const remaining = inStoredOrder(state).filter((record) => !ids.has(record.id));
    await this.store.rewrite(state.userId, remaining.map((record) => withVector(state, record)));
    for (const id of ids) {
      const record = state.records.get(id);
      if (!record) continue;
      state.records.delete(id);
      state.bySeq.delete(record.seq);
      state.corpus.remove(record.seq);
    }
    this.markIndexDirty(state);
  }

  /** Runs a write under the user's lock, starting over if the user was deleted meanwhile. */
  private async underLock<T>(userId: string, state: UserState, task: (state: UserState) => Promise<T>): Promise<T> {
    let current = state;
    for (;;) {
      const result = await current.lock.run(async () => {
        if (current.deleted) return undefined;
        await this.attachVectorIndex(current);
        return { value: await task(current) };
      });
      if (result) return result.value;
      current = await this.user(userId);
    }
  }

  private admit(state: UserState, admitted: ReadonlyArray<{ record: StoredRecord; vector: Float32Array }>): void {
    const units: CorpusUnit[] = [];
    for (const { record, vector } of admitted) {
      state.records.set(record.id, record);
      state.bySeq.set(record.seq, record);
      if (record.request_id !== undefined) state.requestIds.add(record.request_id);
      state.nextSeq = Math.max(state.nextSeq, record.seq + 1);
      units.push(corpusUnit(record, vector));
      // The vector lives in the corpus; its base64 copy served the append and would double the memory.
      delete record.vec;
    }
    state.corpus.add(units);
    this.markIndexDirty(state);
  }

  private markIndexDirty(state: UserState): void {
    state.indexDirty = true;
    if (this.flushDelayMs <= 0 || this.closing) return;
    if (state.flushTimer) clearTimeout(state.flushTimer);
    state.flushTimer = setTimeout(() => {
      state.flushTimer = null;
      this.flushIndex(state).catch((error) => this.logger.warn({ err: errorMessage(error) }, 'index cache flush failed; it is rebuilt from the JSONL on the next start'));
    }, this.flushDelayMs);
    state.flushTimer.unref();
  }

  /** The HNSW file is a cache: written under the lock (hnswlib must not be added to while it writes), temp file then rename. */
  private async flushIndex(state: UserState): Promise<void> {
    await state.lock.run(async () => {
      if (state.deleted || !state.indexDirty) return;
      state.indexDirty = false;
      try {
        const vectors = state.corpus.vectors;
        if (!vectors) return;
        await writeVectorIndexCache(this.store, state.userId, (temp) => vectors.write(temp), {
          model: this.embedder.modelId,
          dimensions: this.embedder.dimensions,
          analyzer: ANALYZER_VERSION,
          complete: state.corpus.vectorIndexComplete,
          max_seq: state.nextSeq - 1,
        });
      } catch (error) {
        state.indexDirty = true;
        throw error;
      }
    });
  }

  /** A loaded user, or null for one that has nothing stored (no state is kept for it). */
  private async existingUser(userId: string): Promise<UserState | null> {
    const loaded = this.users.get(userId);
    if (loaded) return loaded;
    if (this.preload && !this.loading.has(userId)) return null;
    const state = await this.user(userId);
    return state.records.size > 0 ? state : null;
  }

  private user(userId: string): Promise<UserState> {
    const loaded = this.users.get(userId);
    if (loaded) return Promise.resolve(loaded);
    let loading = this.loading.get(userId);
    if (!loading) {
      loading = this.loadUser(userId).finally(() => this.loading.delete(userId));
      this.loading.set(userId, loading);
    }
    return loading;
  }

  private async loadUser(userId: string): Promise<UserState> {
    const { records } = await this.store.load(userId);
    const vectors = await this.vectorsFor(userId, records);
    const corpus = new UserCorpus();
    corpus.add(records.map((record, i) => corpusUnit(record, vectors[i])));
    for (const record of records) delete record.vec;
    const state: UserState = {
      userId,
      lock: new Mutex(),
      records: new Map(records.map((record) => [record.id, record])),
      bySeq: new Map(records.map((record) => [record.seq, record])),
      requestIds: new Set(records.flatMap((record) => (record.request_id === undefined ? [] : [record.request_id]))),
      corpus,
      nextSeq: records.reduce((max, record) => Math.max(max, record.seq + 1), 0),
      indexDirty: false,
      flushTimer: null,
      deleted: false,
      indexCompletion: Promise.resolve(),
      indexOnDisk: null,
    };
    this.users.set(userId, state);
    // Users scored exhaustively read their HNSW index only when first written to: a start then
    // reads and hashes no graph it will not search, and holds none in memory.
    if (records.length > this.weights.exhaustiveLimit) await this.attachVectorIndex(state);
    return state;
  }

  /** Reads (or creates) the user's HNSW index (caller holds the lock) and fills in what it lacks in the background. */
  private async attachVectorIndex(state: UserState): Promise<void> {
    if (state.corpus.vectors) return;
    const index = await this.openVectorIndex(state.userId, state.records.size);
    state.corpus.attachVectorIndex(index);
    state.indexOnDisk = null;
    if (!state.corpus.vectorIndexComplete) state.indexCompletion = this.completeVectorIndex(state);
  }

  /**
   * The start's check of every user's index file. Users scored exhaustively never search their
   * graph, so a current file stays on disk (attached at the user's first write) and a stale or
   * damaged one is rebuilt, saved and let go; larger users keep theirs in memory.
   */
  private async attachAllVectorIndexes(): Promise<void> {
    for (const state of [...this.users.values()]) {
      if (this.closing) return;
      try {
        const small = state.records.size <= this.weights.exhaustiveLimit;
        if (small && (await state.lock.run(() => this.vectorCacheCurrent(state)))) continue;
        await state.lock.run(() => (state.deleted ? Promise.resolve() : this.attachVectorIndex(state)));
        if (!small) continue;
        await state.indexCompletion;
        await this.flushIndex(state);
        await state.lock.run(async () => {
          if (state.deleted || state.indexDirty || !state.corpus.vectorIndexComplete || state.records.size > this.weights.exhaustiveLimit) return;
          state.indexOnDisk = { vectors: state.corpus.vectors!.size };
          state.corpus.detachVectorIndex();
        });
      } catch (error) {
        this.logger.error({ err: errorMessage(error) }, 'vector index could not be opened; searches stay exhaustive');
      }
    }
  }

  /** Whether the user's index file is intact, of this model, and holds every memory (caller holds the lock). */
  private async vectorCacheCurrent(state: UserState): Promise<boolean> {
    if (state.deleted || state.corpus.vectors) return false;
    const cached = await readVectorIndexCache(this.store, state.userId);
    if (cached.status !== 'intact') return false;
    let newest = -1;
    for (const seq of state.bySeq.keys()) if (seq > newest) newest = seq;
    const { meta } = cached;
    const current = this.builtByThisModel(meta) && meta.complete === true && meta.max_seq >= newest;
    if (current) state.indexOnDisk = { vectors: state.records.size };
    return current;
  }

  /**
   * Fills the HNSW index with the vectors a fresh or stale cache lacks, a slice at a time under
   * the user's lock, so a start with a missing index serves at once (exhaustive scoring meanwhile)
   * and writes never interleave with the index being saved.
   */
  private async completeVectorIndex(state: UserState): Promise<void> {
    try {
      for (;;) {
        const remaining = await state.lock.run(async () => (state.deleted ? 0 : state.corpus.indexPending(INDEX_SLICE)));
        if (remaining === 0) break;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      if (!state.deleted) this.markIndexDirty(state);
    } catch (error) {
      this.logger.error({ err: errorMessage(error) }, 'vector index rebuild failed; searches stay exhaustive');
    }
  }

  /** Stored vectors, re-embedding (and rewriting the file) where the model changed since they were written. */
  private async vectorsFor(userId: string, records: StoredRecord[]): Promise<Float32Array[]> {
    const stale = records.filter((record) => record.model !== this.embedder.modelId || record.vec === undefined);
    if (stale.length > 0) {
      this.logger.info({ records: stale.length, model: this.embedder.modelId }, 'embedding model changed: re-embedding stored memories');
      const fresh = await this.embed(stale.map((record) => denseText(unitText(record))));
      stale.forEach((record, i) => {
        record.vec = encodeVector(fresh[i]);
        record.model = this.embedder.modelId;
      });
      await this.store.rewrite(userId, records);
    }
    return records.map((record) => decodeVector(record.vec!));
  }

  private builtByThisModel(meta: VectorIndexMeta): boolean {
    return meta.model === this.embedder.modelId && meta.dimensions === this.embedder.dimensions;
  }

  /** The user's cached index when intact and of this model, else a fresh one to fill. */
  private async openVectorIndex(userId: string, count: number): Promise<VectorIndex> {
    const fresh = (): VectorIndex => VectorIndex.create(this.embedder.dimensions, Math.max(1024, count * 2));
    const cached = await readVectorIndexCache(this.store, userId);
    if (cached.status === 'missing') return fresh();
    if (cached.status === 'damaged') {
      this.logger.warn({ file: cached.metaFile, reason: cached.reason }, 'vector index damaged: rebuilding from the JSONL');
      return fresh();
    }
    if (!this.builtByThisModel(cached.meta)) {
      this.logger.info({ file: cached.file }, 'vector index was built by another model: rebuilding');
      return fresh();
    }
    try {
      return await VectorIndex.read(cached.file, this.embedder.dimensions);
    } catch (error) {
      this.logger.warn({ file: cached.file, err: errorMessage(error) }, 'vector index unreadable: rebuilding from the JSONL');
      return fresh();
    }
  }

  private async embed(texts: string[], priority: 'query' | 'ingest' = 'ingest'): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    try {
      return await this.embedder.embed(texts, { priority });
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

/** A user's records in the order they were written. */
function inStoredOrder(state: UserState): StoredRecord[] {
  return [...state.bySeq.values()].sort((a, b) => a.seq - b.seq);
}

/** The record as stored on disk: in memory its vector lives in the corpus only. */
function withVector(state: UserState, record: StoredRecord): StoredRecord {
  return { ...record, vec: encodeVector(state.corpus.vectorOf(record.seq)!) };
}

function indexStats(state: UserState): PoolStats['per_user'][number]['index'] {
  const inMemory = state.corpus.vectors;
  return {
    loaded: inMemory !== null,
    vectors: inMemory ? inMemory.size : (state.indexOnDisk?.vectors ?? 0),
    complete: inMemory ? state.corpus.vectorIndexComplete : state.indexOnDisk !== null,
    pending_flush: state.indexDirty,
  };
}

function unitText(record: Memory): UnitText {
  return {
    text: record.text,
    role: record.role,
    timeMs: Date.parse(record.occurred_at ?? record.created_at),
    tags: record.tags,
  };
}

/** A record's standalone content, built once: a record is replaced, never changed, so it cannot go stale. */
const contentCache = new WeakMap<StoredRecord, string>();

function hitContent(record: StoredRecord): string {
  let content = contentCache.get(record);
  if (content === undefined) contentCache.set(record, (content = standaloneContent(unitText(record))));
  return content;
}

function corpusUnit(record: StoredRecord, vector: Float32Array): CorpusUnit {
  const text = unitText(record);
  const speaker = record.role ? record.role.toLowerCase() : null;
  return {
    seq: record.seq,
    vector,
    terms: analyze(lexicalText(text)),
    speaker,
    sessionId: record.session_id ?? null,
    messageKey: record.request_id !== undefined && record.message_index !== undefined ? `${record.request_id}#${record.message_index}` : null,
    timeMs: Number.isFinite(text.timeMs) ? text.timeMs : 0,
    importance: record.importance,
    tags: record.tags.map((tag) => tag.toLowerCase()),
    hasTimeExpression: hasTimeExpression(record.text),
    eventPeriod: eventPeriod(record.text, text.timeMs),
    isQuestion: isDistractorQuestion(record.text, speaker),
  };
}

function publicMemory(record: StoredRecord): Memory {
  const { seq: _seq, batch: _batch, vec: _vec, model: _model, ...memory } = record;
  return memory;
}

function roundScore(score: number): number {
  return Math.round(score * 1e6) / 1e6;
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
