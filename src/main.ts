import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { isTls, loadConfig, type Config } from './config.js';
import { httpServerFactory } from './http/http-server.js';
import { Authenticator } from './http/auth.js';
import type { Embedder } from './embedding/embedder.js';
import { createLogger, type Logger } from './logger.js';
import type { MemoryApi } from './memory/memory-api.js';
import type { MemoryService } from './memory/memory-service.js';
import { openService } from './open-service.js';
import { buildServerApp } from './server-app.js';
import { packageVersion } from './http/package-files.js';
import { startTracing } from './telemetry/tracing-start.js';
import { keepHeapHeadroom } from './heap-headroom.js';
import { runCluster, runsCluster, sweepsRetention } from './server-cluster.js';
import { openServiceThreads } from './threads/service-threads.js';

/** What the server runs on: the service on this thread, or on its service threads (src/threads/). */
type ServerService = MemoryApi & Pick<MemoryService, 'dataDir' | 'count' | 'purgeOlderThan' | 'sweepExpired' | 'pruneChanges' | 'startWebhooks' | 'endLongPolls'>;

export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

/** config → service (src/open-service.ts) → app (/mcp mounted) → listen; SIGTERM/SIGINT drain and exit 0. */
export async function startServer(config: Config, options: { handleSignals?: boolean } = {}): Promise<RunningServer> {
  const authenticator = Authenticator.fromConfig(config);
  // Reads the certificate and key now: a bad path fails the start before any data is loaded.
  const serverFactory = httpServerFactory(config);
  // Before the service opens, so that the spans of its first requests are recorded.
  const tracing = config.tracing === null ? null : await startTracing({ ...config.tracing, serviceVersion: packageVersion() });
  const opened: { service: ServerService; embedder: Embedder; logger: Logger; close(): Promise<void> } =
    config.threads > 0 ? await openServiceThreads(config, { onFailure: threadFailed, serviceVersion: packageVersion() }) : await openService(config, { role: 'server' });
  const { service, embedder, logger } = opened;
  const app = await buildServerApp({
    service,
    authenticator,
    logger,
    topKMax: config.topKMax,
    bodyLimit: config.bodyLimit,
    serverFactory,
    loadShedding: { maxEventLoopDelayMs: config.maxEventLoopDelayMs },
    rateLimit: { max: config.rateLimit, windowMs: config.rateLimitWindowMs },
    metricsPublic: config.metricsPublic,
    corsOrigins: config.corsOrigins,
  });
  // Fastify names the scheme from its own `https` option, which a server factory bypasses.
  const url = (await app.listen({ host: config.host, port: config.port })).replace(/^http:/, isTls(config) ? 'https:' : 'http:');
  logger.info({ url, data_dir: service.dataDir, memories: service.count, embedder: embedder.modelId }, 'memorypool listening');
  if (authenticator.open && !isLoopback(config.host)) {
    logger.warn({ host: config.host }, 'no token configured and listening beyond loopback: anyone who can reach this port can read and write memories (set MEMORYPOOL_TOKEN)');
  }

  const retention = config.retentionDays === undefined || !sweepsRetention() ? null : startRetention(service, config.retentionDays, logger);
  const expiry = sweepsRetention() ? startExpirySweep(service, logger) : null;
  const feedPrune = sweepsRetention() ? startChangesPrune(service, config.changesDays, logger) : null;
  // Every process runs the deliverers; a lease in the store lets one of them deliver each hook.
  service.startWebhooks();

  let closing: Promise<void> | null = null;
  const close = (): Promise<void> => {
    closing ??= (async () => {
      if (retention) clearInterval(retention);
      if (expiry) clearInterval(expiry);
      if (feedPrune) clearInterval(feedPrune);
      service.endLongPolls();
      await app.startDraining();
      // Adds in flight finish and are acknowledged; new requests get 503 meanwhile.
      await opened.close();
      await app.close();
      // Last: the spans of the requests drained above are exported before the process exits.
      await tracing?.shutdown();
      logger.info('memorypool stopped');
    })();
    return closing;
  };

  if (options.handleSignals) {
    for (const signal of ['SIGTERM', 'SIGINT'] as const) {
      process.once(signal, () => {
        logger.info({ signal }, 'draining');
        close().then(
          () => process.exit(0),
          (error) => {
            logger.error({ err: (error as Error).message }, 'shutdown failed');
            process.exit(1);
          },
        );
      });
    }
  }
  return { url, close };
}

/**
 * What `npm start` and `memorypool serve` run: one server, or with `processes` > 1 the primary
 * of that many (server-cluster.ts; each worker comes back here and starts its own server).
 */
export async function serve(config: Config): Promise<void> {
  if (runsCluster(config)) {
    runCluster(config, createLogger(config.logLevel));
    return;
  }
  // The server's own heap only: startServer serves in-process tests and apps too. The percent is
  // one for every isolate of the process, and service threads hold the corpora in heaps of their
  // own, which the main thread's would misjudge: with threads, V8 keeps its own factors.
  if (config.threads === 0) keepHeapHeadroom();
  await startServer(config, { handleSignals: true });
}

const RETENTION_SWEEP_MS = 60 * 60 * 1000;

/** Runs `sweep` now, then every hour; it logs what it did, or its failure as `failure`. */
function startHourly(sweep: () => Promise<void>, logger: Logger, failure: string): NodeJS.Timeout {
  const run = (): void => {
    sweep().catch((error: Error) => logger.error({ err: error.message }, failure));
  };
  run();
  const timer = setInterval(run, RETENTION_SWEEP_MS);
  timer.unref();
  return timer;
}

/** Purges memories ingested more than `days` ago: now, then every hour. */
function startRetention(service: ServerService, days: number, logger: Logger): NodeJS.Timeout {
  return startHourly(async () => {
    const purged = await service.purgeOlderThan(Date.now() - days * 86_400_000);
    if (purged > 0) logger.info({ purged, retention_days: days }, 'retention: purged expired memories');
  }, logger, 'retention sweep failed');
}

/** Drops the change feed's events older than `days`: now, then every hour (any process may; they take the feed's lock). */
function startChangesPrune(service: ServerService, days: number, logger: Logger): NodeJS.Timeout {
  return startHourly(async () => {
    const pruned = await service.pruneChanges(days);
    if (pruned > 0) logger.info({ pruned, changes_days: days }, 'change feed: dropped events past its retention');
  }, logger, 'change feed prune failed');
}

/** How often the expired memories are deleted for good (they are invisible from their instant on; this only reclaims space). */
const EXPIRY_SWEEP_MS = 60 * 1000;

function startExpirySweep(service: ServerService, logger: Logger): NodeJS.Timeout {
  const timer = setInterval(() => {
    service.sweepExpired().then(
      (swept) => {
        if (swept > 0) logger.info({ swept }, 'expiry: deleted expired memories');
      },
      (error: Error) => logger.error({ err: error.message }, 'expiry sweep failed'),
    );
  }, EXPIRY_SWEEP_MS);
  timer.unref();
  return timer;
}

/**
 * A service thread that dies leaves its users unserved and may leave their lock files held by this
 * (live) process, which no other would then break: the process stops, as one whose only thread
 * threw would, for its supervisor to start it again.
 */
function threadFailed(error: Error): void {
  process.stderr.write(`memorypool: a service thread failed: ${error.message}\n`);
  process.exit(1);
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

function invokedDirectly(): boolean {
  try {
    return import.meta.url === pathToFileURL(realpathSync(process.argv[1] ?? '')).href;
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  serve(loadConfig()).catch((error: Error) => {
    process.stderr.write(`memorypool: ${error.message}\n`);
    process.exit(1);
  });
}
