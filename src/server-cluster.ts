import cluster, { type Address, type Worker } from 'node:cluster';
import { createRequire } from 'node:module';
import { AggregatorRegistry } from 'prom-client';
import { isTls, type Config } from './config.js';
import type { Logger } from './logger.js';

/**
 * `MEMORYPOOL_PROCESSES` server processes on one port. Node's cluster primary accepts the
 * connections and hands them round robin to the workers; each worker is a whole server
 * (`startServer`) on the same data directory or database. The stores already keep processes that
 * share one consistent (docs/operations.md, "Data files" and "Every core"; replicas on PostgreSQL),
 * so a write one process acknowledged is what the next request to any other sees, and no request
 * needs to reach a particular process.
 *
 * Why processes and not threads: a Search's main-thread work (HTTP, scoring, the answer) is the
 * part one process cannot spread (bench/README.md, issue 20), and a process per core is the one
 * way to run it on every core without sharing the index structures across threads.
 *
 * The primary opens no data: it forks, replaces a worker that dies, forwards the drain signal,
 * and answers the two questions that span the workers: /metrics summed over every process, and
 * the rate limit's counts, kept in one place so that a token's limit holds whichever process
 * serves it.
 */

/** A process that dies within this of its start is replaced only after RESTART_PAUSE_MS. */
const RAPID_DEATH_MS = 10_000;
const RESTART_PAUSE_MS = 1_000;

/** Set in each worker's environment: the worker belongs to a memorypool primary that answers it. */
const WORKER_ENV = 'MEMORYPOOL_CLUSTER_WORKER';
const SWEEPER_ENV = 'MEMORYPOOL_CLUSTER_SWEEPER';
const METRICS = 'memorypool:metrics';
const RATE = 'memorypool:rate';

export function isClusterWorker(): boolean {
  return cluster.isWorker && process.env[WORKER_ENV] === '1';
}

/** Whether this process runs the retention sweep: any server of its own, one of a cluster's. */
export function sweepsRetention(): boolean {
  return !isClusterWorker() || process.env[SWEEPER_ENV] === '1';
}

/** Whether this process should be the primary of `config.processes` server processes. */
export function runsCluster(config: Pick<Config, 'processes'>): boolean {
  return config.processes > 1 && cluster.isPrimary;
}

interface RateCount {
  current: number;
  ttl: number;
}

interface RateStore {
  incr(key: string, callback: (error: Error | null, result: RateCount) => void, timeWindow: number, max: number): void;
}

type PrimaryQuestion = { type: typeof METRICS } | { type: typeof RATE; key: string; timeWindow: number; max: number };
type PrimaryRequest = PrimaryQuestion & { id: number };

type PrimaryReply = { type: string; id: number; error?: string; text?: string; count?: RateCount };

/**
 * Runs the primary until SIGTERM/SIGINT has drained every worker (exit 0), or until a worker
 * fails before it ever listened (exit 1: a configuration the workers cannot start with, such as
 * a port in use, would otherwise be forked again forever).
 */
export function runCluster(config: Config, logger: Logger): void {
  const aggregator = new AggregatorRegistry();
  // @fastify/rate-limit's own in-memory store, in one place for every worker.
  const require = createRequire(import.meta.url);
  const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, cache?: number) => RateStore;
  const rates = new LocalStore(false, false);
  const listened = new WeakSet<Worker>();
  const forkedAt = new WeakMap<Worker, number>();
  let announced = false;
  let stopping = false;
  let failed = false;

  // One process sweeps MEMORYPOOL_RETENTION_DAYS (each would purge the same memories every hour); its replacement takes over.
  let sweeper: Worker | null = null;
  const fork = (sweeps = false): void => {
    const worker = cluster.fork({ [WORKER_ENV]: '1', [SWEEPER_ENV]: sweeps ? '1' : '0' });
    forkedAt.set(worker, Date.now());
    if (sweeps) sweeper = worker;
  };

  cluster.on('listening', (worker, address: Address) => {
    listened.add(worker);
    const workers = Object.values(cluster.workers ?? {});
    if (announced || workers.length < config.processes || !workers.every((each) => each && listened.has(each))) return;
    announced = true;
    const host = address.address?.includes(':') ? `[${address.address}]` : address.address;
    logger.info({ url: `${isTls(config) ? 'https' : 'http'}://${host}:${address.port}`, processes: config.processes }, 'memorypool processes listening');
  });

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (code !== 0) failed = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(failed ? 1 : 0);
      return;
    }
    if (!listened.has(worker)) {
      logger.error({ pid: worker.process.pid, code, signal }, 'a server process exited before it listened: stopping the others');
      stopAll(true);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, 'a server process died: starting another');
    // One that dies soon after its start waits a moment: a crash loop must not take the cores the others serve on.
    const lived = Date.now() - (forkedAt.get(worker) ?? 0);
    const sweeps = worker === sweeper;
    if (lived < RAPID_DEATH_MS) {
      setTimeout(() => {
        if (!stopping) fork(sweeps);
      }, RESTART_PAUSE_MS);
    } else fork(sweeps);
  });

  cluster.on('message', (worker, message: PrimaryRequest) => {
    if (message?.type === METRICS) {
      aggregator.clusterMetrics().then(
        (text) => reply(worker, { type: METRICS, id: message.id, text }),
        (error: Error) => reply(worker, { type: METRICS, id: message.id, error: error.message }),
      );
    } else if (message?.type === RATE) {
      rates.incr(message.key, (error, count) => reply(worker, { type: RATE, id: message.id, count, error: error?.message }), message.timeWindow, message.max);
    }
  });

  const stopAll = (fail: boolean): void => {
    stopping = true;
    failed ||= fail;
    const workers = Object.values(cluster.workers ?? {}).filter((worker): worker is Worker => worker !== undefined);
    if (workers.length === 0) process.exit(failed ? 1 : 0);
    // SIGTERM, not worker.kill(): each worker drains (answers what it holds, 503s new requests) and exits 0.
    for (const worker of workers) worker.process.kill('SIGTERM');
  };

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.once(signal, () => {
      logger.info({ signal }, 'draining every server process');
      stopAll(false);
    });
  }
  for (let i = 0; i < config.processes; i++) fork(i === 0);
}

function reply(worker: Worker, message: PrimaryReply): void {
  // A worker that died meanwhile has nobody waiting for the answer.
  if (worker.isConnected()) worker.send(message);
}

let nextId = 0;
const pending = new Map<number, (reply: PrimaryReply) => void>();
let listening = false;

/** One question to the primary, answered over the cluster's IPC channel. */
function askPrimary(question: PrimaryQuestion): Promise<PrimaryReply> {
  if (!listening) {
    listening = true;
    process.on('message', (answer: PrimaryReply) => {
      const resolve = pending.get(answer?.id);
      if (!resolve || (answer.type !== METRICS && answer.type !== RATE)) return;
      pending.delete(answer.id);
      resolve(answer);
    });
  }
  const message: PrimaryRequest = { ...question, id: ++nextId };
  return new Promise((resolve, reject) => {
    pending.set(message.id, resolve);
    process.send?.(message, undefined, undefined, (error) => {
      if (!error) return;
      pending.delete(message.id);
      reject(error);
    });
  });
}

/** The Prometheus text of every server process, summed by the primary (gauges of pool-wide counts taken once). */
export async function clusterMetricsText(): Promise<string> {
  const answer = await askPrimary({ type: METRICS });
  if (answer.error !== undefined || answer.text === undefined) throw new Error(`metrics of the other server processes: ${answer.error ?? 'no answer'}`);
  return answer.text;
}

/** The registries the primary's aggregation reads in this worker. */
export function shareMetrics(registries: Parameters<typeof AggregatorRegistry.setRegistries>[0]): void {
  // Constructing one is what installs prom-client's answering listener in a worker.
  new AggregatorRegistry();
  AggregatorRegistry.setRegistries(registries);
}

/**
 * A @fastify/rate-limit store whose counts live in the primary: one window per token across
 * every process, where per-process counts would let a client through N times the limit.
 */
export class ClusterRateStore implements RateStore {
  incr(key: string, callback: (error: Error | null, result: RateCount) => void, timeWindow: number, max: number): void {
    askPrimary({ type: RATE, key, timeWindow, max }).then(
      (answer) => (answer.count ? callback(null, answer.count) : callback(new Error(answer.error ?? 'no rate count from the primary'), { current: 0, ttl: 0 })),
      (error: Error) => callback(error, { current: 0, ttl: 0 }),
    );
  }

  child(): ClusterRateStore {
    return this;
  }
}
