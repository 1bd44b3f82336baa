import { MessageChannel, Worker } from 'node:worker_threads';
import type { Config } from '../config.js';
import { createEmbedder } from '../embedding/create-embedder.js';
import type { Embedder } from '../embedding/embedder.js';
import { workerEntry } from '../embedding/onnx-threads.js';
import { createError } from '../errors.js';
import { createLogger, type Logger } from '../logger.js';
import type { MemoryApi } from '../memory/memory-api.js';
import type { PoolStats } from '../memory/pool-stats.js';
import type { BatchOutcome } from '../memory/types.js';
import type { UserCheck } from '../protocol/operations.js';
import type { PlatformSearchAnswer, PlatformSearchDoor } from '../protocol/platform.js';
import { traceCarrier } from '../telemetry/tracing.js';
import { serveEmbedder } from './port-embedder.js';
import type { ServiceThreadData } from './service-thread.js';
import { fromWire, threadOf, type ThreadCall, type ThreadReply, type ThreadStarted, type WireError } from './wire.js';

/**
 * The server's service on `MEMORYPOOL_THREADS` threads (issue 29: every core from one process).
 * Each thread runs a MemoryService on the same data directory or database and owns the users
 * `threadOf` gives it: their calls go to it, so each cached user is held once, and a user's
 * writes and searches are ordered on one thread as before. The main thread keeps HTTP, the
 * answers' JSON and the encoder (shared by every thread: one model, one batching queue, one
 * query-vector cache). Calls about the whole pool (counts, stats, the change feed, webhooks,
 * the sweeps) go to thread 0; the stores keep services that share them consistent (as they
 * keep processes and replicas), so its answers count every thread's writes.
 */

/** How long a closed thread may take to end by itself before it is stopped (ms). */
const THREAD_EXIT_WAIT_MS = 2_000;

interface Pending {
  resolve: (value: unknown) => void;
  reject: (error: unknown) => void;
}

interface Thread {
  worker: Worker;
  pending: Map<number, Pending>;
}

export interface ServiceThreadsOptions {
  config: Config;
  threads: number;
  /** The encoder every thread uses; ready before the threads start. */
  embedder: Embedder;
  /** Told when a thread dies after its start: its users cannot be served, and its locks may be held. */
  onFailure: (error: Error) => void;
  /** The package's version, for the threads' spans. */
  serviceVersion: string;
}

type Args<M extends keyof MemoryApi> = MemoryApi[M] extends (...args: infer A) => unknown ? A : never;
type Answer<M extends keyof MemoryApi> = MemoryApi[M] extends (...args: never[]) => infer R ? R : never;

export class ServiceThreads implements MemoryApi, PlatformSearchDoor {
  readonly embedder: Embedder;
  /** Where the data lives, as thread 0 names it. */
  readonly dataDir: string;
  private readonly threads: Thread[];
  private nextId = 1;
  private lastCount = 0;
  private closing: Promise<void> | null = null;
  /** Shared with the threads' exit handlers: an exit after this is the close's, not a failure. */
  private readonly state: { closing: boolean };

  private constructor(embedder: Embedder, threads: Thread[], dataDir: string, state: { closing: boolean }) {
    this.embedder = embedder;
    this.threads = threads;
    this.dataDir = dataDir;
    this.state = state;
  }

  /** Starts the threads and resolves once every one has opened its service (the first failure rejects, the others closed). */
  static async start(options: ServiceThreadsOptions): Promise<ServiceThreads> {
    const entry = workerEntry('service-thread', import.meta.url);
    const threads: Thread[] = [];
    const state = { closing: false };
    // The process ending (its exit terminates every thread) is not a thread's failure.
    process.once('exit', () => (state.closing = true));
    const started: Array<Promise<string>> = [];
    for (let index = 0; index < options.threads; index++) {
      const channel = new MessageChannel();
      serveEmbedder(channel.port1, options.embedder);
      channel.port1.unref();
      const workerData: ServiceThreadData = {
        config: options.config,
        index,
        threads: options.threads,
        embedderPort: channel.port2,
        embedder: { modelId: options.embedder.modelId, dimensions: options.embedder.dimensions },
        serviceVersion: options.serviceVersion,
      };
      const worker = new Worker(entry.file, { eval: entry.eval, workerData, transferList: [channel.port2] });
      const thread: Thread = { worker, pending: new Map() };
      threads.push(thread);
      started.push(
        new Promise<string>((resolve, reject) => {
          let open = false;
          worker.on('message', (message: ThreadStarted | ThreadReply) => {
            if ('started' in message) {
              if (message.started) {
                open = true;
                resolve(message.dataDir);
              } else reject(new Error(message.error));
              return;
            }
            const call = thread.pending.get(message.id);
            if (!call) return;
            thread.pending.delete(message.id);
            if ('error' in message) call.reject(fromWire(message.error));
            else call.resolve(message.result);
          });
          worker.on('error', (error) => {
            if (!open) reject(error);
            else options.onFailure(error);
          });
          worker.on('exit', (code) => {
            const error = createError('INTERNAL', `A service thread stopped (exit code ${code})`);
            for (const call of thread.pending.values()) call.reject(error);
            thread.pending.clear();
            if (!open) reject(error);
            else if (!state.closing) options.onFailure(error);
          });
        }),
      );
    }
    try {
      const [dataDir] = await Promise.all(started);
      return new ServiceThreads(options.embedder, threads, dataDir, state);
    } catch (error) {
      // The others' ends are this failure's, told to the caller once.
      state.closing = true;
      await Promise.all(threads.map((thread) => thread.worker.terminate()));
      throw error;
    }
  }

  /** Memories stored, as the last count answered here said (0 before the first). */
  get count(): number {
    return this.lastCount;
  }

  addMemory(...args: Args<'addMemory'>): Answer<'addMemory'> {
    return this.onUser(args[0].userId, 'addMemory', args);
  }

  addConversation(...args: Args<'addConversation'>): Answer<'addConversation'> {
    return this.onUser(args[0].userId, 'addConversation', args);
  }

  search(...args: Args<'search'>): Answer<'search'> {
    return this.onUser(args[0].userId, 'search', args);
  }

  /** On the thread of the first user named: the other users are read there too (a search across users is rare). */
  searchUsers(...args: Args<'searchUsers'>): Answer<'searchUsers'> {
    return this.onUser(args[0][0] ?? '', 'searchUsers', args);
  }

  list(...args: Args<'list'>): Answer<'list'> {
    return this.onUser(args[0].userId, 'list', args);
  }

  listPage(...args: Args<'listPage'>): Answer<'listPage'> {
    return this.onUser(args[0].userId, 'listPage', args);
  }

  listUsersPage(...args: Args<'listUsersPage'>): Answer<'listUsersPage'> {
    return this.onUser(args[0][0] ?? '', 'listUsersPage', args);
  }

  get(...args: Args<'get'>): Answer<'get'> {
    return this.onUser(args[0], 'get', args);
  }

  updateMemory(...args: Args<'updateMemory'>): Answer<'updateMemory'> {
    return this.onUser(args[0].userId, 'updateMemory', args);
  }

  entities(...args: Args<'entities'>): Answer<'entities'> {
    return this.onUser(args[0], 'entities', args);
  }

  history(...args: Args<'history'>): Answer<'history'> {
    return this.onUser(args[0], 'history', args);
  }

  delete(...args: Args<'delete'>): Answer<'delete'> {
    return this.onUser(args[0], 'delete', args);
  }

  deleteUser(...args: Args<'deleteUser'>): Answer<'deleteUser'> {
    return this.onUser(args[0], 'deleteUser', args);
  }

  /** Each refused operation's error comes as data (service-thread.ts) and is an AppError again here. */
  async batch(...args: Args<'batch'>): Promise<BatchOutcome[]> {
    const outcomes = await this.onUser<Promise<Array<BatchOutcome | { error: WireError }>>>(args[0], 'batch', args);
    return outcomes.map((outcome) => ('error' in outcome ? ({ error: fromWire(outcome.error as WireError) } as BatchOutcome) : outcome));
  }

  deleteMatching(...args: Args<'deleteMatching'>): Answer<'deleteMatching'> {
    return this.onUser(args[0], 'deleteMatching', args);
  }

  exportRecords(...args: Args<'exportRecords'>): Answer<'exportRecords'> {
    return this.onUser(args[0], 'exportRecords', args);
  }

  exportUnits(...args: Args<'exportUnits'>): Answer<'exportUnits'> {
    return this.onUser(args[0], 'exportUnits', args);
  }

  /** On thread 0, without a progress callback (none crosses threads; no door of the server passes one). */
  importRecords(...args: Args<'importRecords'>): Answer<'importRecords'> {
    return this.call(0, 'importRecords', [args[0]]);
  }

  /** On thread 0, the caller's scope sent as data (a function does not cross threads). */
  changes(...args: Args<'changes'>): Answer<'changes'> {
    const { allowed: _allowed, ...request } = args[0];
    if (request.prefixes === undefined) return Promise.reject(new Error('A change feed read through the service threads needs its scope as data (UserCheck.prefixes)'));
    return this.call(0, 'changes', [request]);
  }

  /** The platform's Search made whole on the user's thread (PlatformSearchDoor): a hit's four fields cross, not its memory. */
  platformSearchAnswer(input: unknown, topKMax: number, checkUser: UserCheck): Promise<PlatformSearchAnswer> {
    if (checkUser.prefixes === undefined) return Promise.reject(new Error('A search through the service threads needs its scope as data (UserCheck.prefixes)'));
    const userId = typeof input === 'object' && input !== null && typeof (input as { user_id?: unknown }).user_id === 'string' ? (input as { user_id: string }).user_id : '';
    return this.onUser(userId, 'platformSearchAnswer', [input, topKMax, checkUser.prefixes]);
  }

  webhooks(): Answer<'webhooks'> {
    return this.call(0, 'webhooks', []);
  }

  /** Each thread's figures of the users it owns (from its cache where it holds them), put together. */
  async stats(): Promise<PoolStats> {
    const parts = await Promise.all(this.threads.map((_thread, index) => this.call<PoolStats>(index, 'stats', [])));
    const budgets = parts.map((part) => part.cache.budget_bytes);
    return {
      count: parts.reduce((sum, part) => sum + part.count, 0),
      users: parts.reduce((sum, part) => sum + part.users, 0),
      embedder: { ...parts[0].embedder, reembedding: parts.reduce((sum, part) => sum + part.embedder.reembedding, 0) },
      cache: {
        users: parts.reduce((sum, part) => sum + part.cache.users, 0),
        estimated_bytes: parts.reduce((sum, part) => sum + part.cache.estimated_bytes, 0),
        budget_bytes: budgets.some((budget) => budget === null) ? null : budgets.reduce<number>((sum, budget) => sum + budget!, 0),
      },
      per_user: parts.flatMap((part) => part.per_user),
    };
  }

  /** Thread 0's count (the store's, less the expired memories it holds), less those the other threads hold. */
  memoryCount(): Promise<number> {
    return this.counted('memoryCount');
  }

  healthCount(): Promise<number> {
    return this.counted('healthCount');
  }

  private async counted(method: 'memoryCount' | 'healthCount'): Promise<number> {
    const [count, ...expired] = await Promise.all([this.call<number>(0, method, []), ...this.threads.slice(1).map((_thread, index) => this.call<number>(index + 1, 'expiredHeld', []))]);
    return (this.lastCount = Math.max(0, count - expired.reduce((sum, held) => sum + held, 0)));
  }

  userCount(): Promise<number> {
    return this.call(0, 'userCount', []);
  }

  async indexesInProgress(): Promise<number> {
    const counts = await Promise.all(this.threads.map((_thread, index) => this.call<number>(index, 'indexesInProgress', [])));
    return counts.reduce((sum, count) => sum + count, 0);
  }

  /** The sweeps and the feed's pruning run on thread 0 alone, as one process of a cluster runs them. */
  sweepExpired(): Promise<number> {
    return this.call(0, 'sweepExpired', []);
  }

  purgeOlderThan(cutoffMs: number): Promise<number> {
    return this.call(0, 'purgeOlderThan', [cutoffMs]);
  }

  pruneChanges(days: number): Promise<number> {
    return this.call(0, 'pruneChanges', [days]);
  }

  /** Thread 0 delivers the webhooks (the store's lease would let one thread deliver each hook anyway). */
  startWebhooks(): void {
    void this.call(0, 'startWebhooks', []).catch(() => undefined);
  }

  endLongPolls(): void {
    for (let index = 0; index < this.threads.length; index++) void this.call(index, 'endLongPolls', []).catch(() => undefined);
  }

  /** Closes every thread's service (work in flight finished, index caches written), then the threads. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      this.state.closing = true;
      const ended = this.threads.map((thread) => new Promise<void>((resolve) => thread.worker.once('exit', () => resolve())));
      const closed = await Promise.allSettled(this.threads.map((_thread, index) => this.call(index, 'close', [])));
      // Each thread ends by itself once closed; one that does not is stopped.
      await Promise.all(
        ended.map((end, index) =>
          Promise.race([end, new Promise<void>((resolve) => setTimeout(resolve, THREAD_EXIT_WAIT_MS).unref())]).then(() => this.threads[index].worker.terminate()),
        ),
      );
      const failed = closed.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
      if (failed) throw failed.reason;
    })();
    return this.closing;
  }

  private onUser<T>(userId: string, method: string, args: readonly unknown[]): T {
    return this.call(threadOf(userId, this.threads.length), method, args) as T;
  }

  private call<T>(index: number, method: string, args: readonly unknown[]): Promise<T> {
    const thread = this.threads[index];
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      thread.pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      const call: ThreadCall = { id, method, args: args as unknown[], trace: traceCarrier() };
      try {
        thread.worker.postMessage(call);
      } catch (error) {
        thread.pending.delete(id);
        reject(error);
      }
    });
  }
}

/** The server's service on its threads, with the encoder they share (what openService is for a server on one thread). */
export async function openServiceThreads(config: Config, options: Pick<ServiceThreadsOptions, 'onFailure' | 'serviceVersion'>): Promise<{ service: ServiceThreads; embedder: Embedder; logger: Logger; close(): Promise<void> }> {
  const logger = createLogger(config.logLevel);
  const embedder = createEmbedder(config);
  let service: ServiceThreads;
  try {
    await embedder.ready();
    service = await ServiceThreads.start({ config, threads: config.threads, embedder, ...options });
  } catch (error) {
    await embedder.close();
    throw error;
  }
  return {
    service,
    embedder,
    logger,
    close: async () => {
      await service.close();
      await embedder.close();
    },
  };
}
