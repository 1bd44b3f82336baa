import type { Embedder } from '../embedding/embedder.js';
import { createError, isAppError } from '../errors.js';
import { denseText } from '../ingest/message-units.js';
import { silentLogger, type Logger } from '../logger.js';
import { resolveWeights, type RetrievalWeights } from '../retrieval/retrieval-config.js';
import type { MemoryStore } from '../store/memory-store.js';
import { ConversationAdds } from './conversation-adds.js';
import { IndexLifecycle } from './index-lifecycle.js';
import { errorMessage, unitText } from './memory-records.js';
import { UserCache } from './user-cache.js';
import { cacheStats, expiredHeld, poolStats, type PoolStats } from './pool-stats.js';
import { exportRecords, exportUnits, importRecords, type ExportedUnit, type PortableRecord } from './portability.js';
import type { ServiceContext } from './service-context.js';
import type { UserState } from './user-state.js';
import type { SearchOverrides } from './query-plan.js';
import type { RerankSettings } from './rerank-hits.js';
import { getMemory, listMemories, memoryHistory, searchMemories, searchUsers } from './memory-reads.js';
import { addMemory, deleteMemory, purgeOlderThan, updateMemory } from './memory-edits.js';
import type { Memory, MemoryFilter, MemoryVersion } from '../domain/memory.js';
import { deleteMatching } from './delete-matching.js';
import { listEntities, type EntitySummary } from './entity-reads.js';
import { writeBatch } from './batch-writes.js';
import { isExpired } from '../domain/scope.js';
import { listPage, listUsersPage, type ListPage } from './list-pages.js';
import { sweepExpired, type SweepCursor } from './expiry-sweep.js';
import { MEMORY_TEXT, QUERY_TEXT, tracingEnabled, USER_ID, withSpan, type Attributes } from '../telemetry/tracing.js';
import { prepareSearchTables } from './search-tables.js';
import { ChangeFeed, type ChangesPage, type ChangesRequest } from './change-feed.js';
import type { DeliveryTiming } from '../webhooks/hook-delivery.js';
import { WebhookDeliverer, type WebhookStatus } from '../webhooks/webhook-deliverer.js';
import type { WebhookSpec } from '../webhooks/webhooks-file.js';
import type {
  AddOutcome,
  BatchOperation,
  BatchOutcome,
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
/** How long a health probe waits for the pool's count before it takes the last one known (see healthCount). */
const HEALTH_COUNT_WAIT_MS = 2_000;
/** A pool of more users is not loaded in the background at the start (see warmUp). */
const WARM_UP_MAX_USERS = 2_000;

export interface MemoryServiceOptions {
  /** Where the memories live (chosen by src/open-service.ts: the JSONL data directory or PostgreSQL). */
  store: MemoryStore;
  embedder: Embedder;
  logger?: Logger;
  /** Load every user at open (the server); the CLI loads only the users it touches. */
  preload?: boolean;
  /**
   * The users this service answers for, where several services of one process share the pool
   * (the server's threads, src/threads/): the start's background loading loads only these.
   */
  owns?: (userId: string) => boolean;
  weights?: Partial<RetrievalWeights>;
  /** A reranker for the best hits of each Search (MEMORYPOOL_RERANKER_DIR; rerank-hits.ts). The service does not close it. */
  rerank?: RerankSettings;
  /** Flush index caches this long after the last write (ms); 0 flushes only on close. */
  indexFlushDelayMs?: number;
  /** Estimated bytes the cached users may take; unset keeps every loaded user. */
  cacheBytes?: number;
  /** The clock expiry is judged by (Unix ms; default Date.now): a test moves its own. */
  clock?: () => number;
  /** How often a long poll of the change feed looks for other processes' events (ms; see change-feed.ts). */
  changesPollMs?: number;
  /** The webhooks this service delivers once `startWebhooks` is called (MEMORYPOOL_WEBHOOKS_FILE; src/webhooks/). */
  webhooks?: readonly WebhookSpec[];
  /** The webhooks' retry schedule and lease, shortened by tests (defaults: hook-delivery.ts). */
  webhookTiming?: Partial<DeliveryTiming>;
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
  private readonly conversations: ConversationAdds;
  private readonly feed: ChangeFeed;
  private readonly hooks: WebhookDeliverer;
  private readonly preload: boolean;
  private readonly owns: (userId: string) => boolean;
  private inFlight = 0;
  /** Memories stored, as of the last count plus this service's own writes since. */
  private total = 0;
  private background: Promise<void> = Promise.resolve();
  private drained: (() => void) | null = null;
  private counting: Promise<number> | null = null;
  /** Ends the background loading's current pause (on close). */
  private wakeWarmUp: (() => void) | null = null;
  private closing = false;
  /** Where the expiry sweep's pass over the users not held here goes on from. */
  private readonly sweepCursor: SweepCursor = { next: 0 };

  private constructor(options: MemoryServiceOptions) {
    this.embedder = options.embedder;
    this.logger = options.logger ?? silentLogger();
    this.store = options.store;
    this.weights = resolveWeights(options.weights);
    this.preload = options.preload ?? true;
    this.owns = options.owns ?? (() => true);
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
      rerank: options.rerank,
      existingUser: (userId) => this.existingUser(userId),
      underLock: (userId, task, options) => this.underLock(userId, task, options),
      embed: (texts, priority, key) => this.embed(texts, priority, key),
      counted: (delta) => {
        this.total += delta;
      },
      now: options.clock ?? Date.now,
      visible: (record, nowMs) => !isExpired(record, nowMs),
    };
    this.conversations = new ConversationAdds(this.context, (work) => this.track(work));
    this.feed = new ChangeFeed(this.context, { pollMs: options.changesPollMs });
    this.hooks = new WebhookDeliverer(options.webhooks ?? [], { feed: this.feed, store: this.store, logger: this.logger, timing: options.webhookTiming });
  }

  static async open(options: MemoryServiceOptions): Promise<MemoryService> {
    const service = new MemoryService(options);
    // The model loads on the encoder's thread meanwhile; a server's main thread, idle until it
    // has, prepares what its first Search would otherwise load in that Search.
    const ready = Promise.all([service.store.init(), service.embedder.ready()]);
    try {
      if (service.preload) prepareSearchTables(service.weights);
    } catch (error) {
      // WordNet unreadable (MEMORYPOOL_WORDNET_DIR): every Search would fail on it, so the start does.
      ready.catch(() => undefined);
      throw error;
    }
    await ready;
    // Serving starts at once: a request loads its own user; counting and loading the others wait
    // (see warmUp), so that nothing the start does scales with the size of the pool.
    if (service.preload) service.background = service.warmUp();
    return service;
  }

  /**
   * Counts the pool and loads users (up to the cache budget, and only in a pool of at most
   * WARM_UP_MAX_USERS users), one at a time, after the first
   * requests have had the process to themselves: a request needs only its own user, and the
   * loads here would otherwise hold the event loop while it waits. Searches score exhaustively
   * until a user's index is complete.
   */
  private async warmUp(): Promise<void> {
    try {
      await this.idleFor(WARM_UP_DELAY_MS);
      if (this.closing) return;
      await this.memoryCount();
      // Past a few thousand users the ones loaded first would be a guess (and listing them reads
      // every user's folder): a large pool loads each user on its first request instead.
      if ((await this.store.countUsers()) > WARM_UP_MAX_USERS) return;
      for (const userId of await this.store.listUsers()) {
        if (!this.owns(userId)) continue;
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
  async memoryCount(): Promise<number> {
    this.counting ??= this.store
      .countMemories()
      .then((total) => (this.total = total))
      .finally(() => (this.counting = null));
    // Expired memories are counted nowhere else either: those of the users held here come off at
    // once; a user not held here drops its expired ones when the sweep deletes them (every minute).
    return Math.max(0, (await this.counting) - expiredHeld(this.context));
  }

  /**
   * `memoryCount` for a health probe: when the count takes longer than HEALTH_COUNT_WAIT_MS (the
   * one measure of every user of a data directory written before `sync/pool-figures.json`
   * existed: minutes at 100,000 users), the last count known, so that the probe answers while the
   * count goes on (0 until the first one completes).
   */
  async healthCount(): Promise<number> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), HEALTH_COUNT_WAIT_MS)));
    try {
      const counted = await Promise.race([this.memoryCount(), late]);
      return counted ?? Math.max(0, this.total - expiredHeld(this.context));
    } finally {
      clearTimeout(timer);
    }
  }

  /** Memories held here that have expired and are not swept yet: what `memoryCount` takes off the store's total (the service threads sum it over every thread). */
  expiredHeld(): number {
    return expiredHeld(this.context);
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
    return this.operation('add', input.userId, () => this.track(() => addMemory(this.context, input)), () => ({ [MEMORY_TEXT]: input.text }));
  }

  /** Stores an evaluation-platform Add, at most once per (request_id, user_id) (see conversation-adds.ts). */
  addConversation(input: ConversationAdd): Promise<AddOutcome> {
    return this.operation('add', input.userId, () => this.conversations.add(input), () => ({
      'memorypool.messages': input.messages.length,
      [MEMORY_TEXT]: input.messages.map((message) => message.content).join('\n'),
    }));
  }

  search(request: SearchRequest, overrides: SearchOverrides = {}): Promise<SearchHit[]> {
    return this.operation('search', request.userId, () => this.track(() => searchMemories(this.context, request, overrides)), () => ({
      'memorypool.search.top_k': request.limit,
      [QUERY_TEXT]: request.query,
    }));
  }

  /** Several users at once: each ranked as alone, merged by score, each distinct text once across them (see memory-reads.ts). */
  searchUsers(userIds: readonly string[], request: Omit<SearchRequest, 'userId'>, overrides: SearchOverrides = {}): Promise<SearchHit[]> {
    return this.track(() => searchUsers(this.context, userIds, request, overrides));
  }

  /** A page over several users, newest first, and the cursor of the next (see list-pages.ts). */
  listUsersPage(userIds: readonly string[], request: Omit<ListRequest, 'userId'> & { cursor?: string }): Promise<ListPage> {
    return listUsersPage(this.context, userIds, request);
  }

  /** Newest first. */
  list(request: ListRequest): Promise<Memory[]> {
    return this.operation('list', request.userId, () => listMemories(this.context, request));
  }

  /** A page of the list and the cursor of the next (see list-pages.ts). */
  listPage(request: ListRequest & { cursor?: string }): Promise<ListPage> {
    return this.operation('list', request.userId, () => listPage(this.context, request));
  }

  get(userId: string, id: string): Promise<Memory> {
    return this.operation('get', userId, () => getMemory(this.context, userId, id));
  }

  /** A new version of a memory (see memory-edits.ts). */
  updateMemory(input: MemoryUpdate): Promise<Memory> {
    return this.operation('update', input.userId, () => this.track(() => updateMemory(this.context, input)), () => ({ [MEMORY_TEXT]: input.text }));
  }

  /** The user's entities, the most mentioned first, at most `limit` (see entity-reads.ts). */
  entities(userId: string, limit: number): Promise<EntitySummary[]> {
    return this.operation('entities', userId, () => listEntities(this.context, userId, limit));
  }

  /** Every version of a memory, oldest first, the current one last. */
  history(userId: string, id: string): Promise<{ id: string; versions: MemoryVersion[] }> {
    return this.operation('history', userId, () => memoryHistory(this.context, userId, id));
  }

  async delete(userId: string, id: string): Promise<void> {
    await this.operation('delete', userId, () => this.track(() => deleteMemory(this.context, userId, id)));
  }

  /** Removes everything stored for a user, files included. Returns how many memories it held. */
  async deleteUser(userId: string): Promise<number> {
    return this.operation('delete_user', userId, () => this.track(() =>
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
    ));
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


  /** Adds, updates and deletes of one user in one store write, each answered on its own (see batch-writes.ts). */
  batch(userId: string, operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
    return this.track(() => writeBatch(this.context, userId, operations));
  }

  /** Deletes every memory of the user the filter passes, or with `dryRun` counts them (see delete-matching.ts). */
  deleteMatching(userId: string, filter: MemoryFilter, dryRun = false): Promise<number> {
    return this.operation('purge', userId, () => this.track(() => deleteMatching(this.context, userId, filter, dryRun)));
  }

  /** Deletes for good the memories that have expired (invisible already); returns how many went. */
  sweepExpired(): Promise<number> {
    return this.track(() => sweepExpired(this.context, this.sweepCursor));
  }

  /** Deletes every memory stored (ingested) before the cutoff; returns how many went. */
  purgeOlderThan(cutoffMs: number): Promise<number> {
    return this.track(() => purgeOlderThan(this.context, cutoffMs));
  }

  /** A page of the change feed after a cursor, held up to `waitSeconds` until an event arrives (see change-feed.ts). */
  changes(request: ChangesRequest): Promise<ChangesPage> {
    return this.feed.read(request);
  }

  /** Answers every long poll of the change feed now, and any later one at once (a draining server must not wait up to a minute for them). */
  endLongPolls(): void {
    this.feed.close();
  }

  /** Starts delivering the configured webhooks (a server does; a CLI command does not). */
  startWebhooks(): void {
    this.hooks.start();
  }

  /** Each configured webhook's delivery state (GET /mem/webhooks; never its secret). */
  webhooks(): Promise<WebhookStatus[]> {
    return this.hooks.status();
  }

  /** Drops the change feed's events older than `days`; returns how many went. */
  pruneChanges(days: number): Promise<number> {
    return this.feed.prune(days);
  }

  async listUsers(): Promise<string[]> {
    return this.store.listUsers();
  }

  /** Per-user figures without loading anyone (see pool-stats.ts); with `only`, of those users alone. */
  stats(only?: (userId: string) => boolean): Promise<PoolStats> {
    return poolStats(this.context, only);
  }


  /** Stops new work, waits for work in flight, writes the index caches. */
  async close(): Promise<void> {
    this.closing = true;
    this.lifecycle.closing = true;
    this.wakeWarmUp?.();
    // The delivery under way finishes and its progress is saved before the store closes.
    await this.hooks.stop();
    this.feed.close();
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
      // Retired meanwhile (evicted to load another user): let the event loop run before loading
      // it again. A small user loads without a trip to libuv's pool, so writers evicting each
      // other under a tight budget would otherwise go round in microtasks while the writes they
      // wait for never get their I/O (test/memory/user-cache.test.ts, "writes in flight").
      await new Promise<void>((resolve) => setImmediate(resolve));
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

  /**
   * The operation's span (src/telemetry/tracing.ts): what was asked of the service, beneath the
   * door's span (HTTP, MCP) and above the encoder, store and retrieval spans of its work.
   */
  private operation<T>(name: string, userId: string, work: () => Promise<T>, attributes?: () => Attributes): Promise<T> {
    if (!tracingEnabled()) return work();
    return withSpan(`memorypool.${name}`, { 'memorypool.operation': name, [USER_ID]: userId, ...attributes?.() }, work);
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
