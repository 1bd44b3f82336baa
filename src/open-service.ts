import { storeOptions, type Config } from './config.js';
import { createEmbedder, serviceWeights } from './embedding/create-embedder.js';
import { createReranker } from './embedding/create-reranker.js';
import type { Embedder } from './embedding/embedder.js';
import { createLogger, type Logger } from './logger.js';
import { MemoryService, type MemoryServiceOptions } from './memory/memory-service.js';
import { takeInLegacyMemories } from './protocol/legacy-take-in.js';
import { loadHnswlib } from './retrieval/vector-index.js';
import { JsonlMemoryStore } from './store/jsonl-memory-store.js';
import type { MemoryStore } from './store/memory-store.js';
import { PostgresStore } from './store/postgres-store.js';
import { readWebhooksFile } from './webhooks/webhooks-file.js';

/**
 * The one place the service is assembled: config → store → embedder → service, then the legacy
 * memories file taken in. The server, the CLI's commands, `memorypool mcp` and `openMemoryPool`
 * all call this, so each runs on the same store with the same weights.
 */

export interface OpenedService {
  service: MemoryService;
  embedder: Embedder;
  logger: Logger;
  /** Closes the service (index caches written), then the encoder. */
  close(): Promise<void>;
}

/**
 * `server` loads every user at the start and logs at the configured level; `command` (started from
 * the shell: the CLI, MCP stdio, the in-process pool) loads users when first touched, and since
 * stdout belongs to the command, logs (to stderr) start at warn unless another level was asked for.
 */
export type ServiceRole = 'server' | 'command';

/** Where the memories live: PostgreSQL when a database URL is given, else the JSONL data directory. */
export function openStore(location: { dataDir?: string; databaseUrl?: string }, logger: Logger): MemoryStore {
  if (location.databaseUrl !== undefined) return new PostgresStore({ url: location.databaseUrl, logger });
  if (location.dataDir === undefined) throw new Error('The service needs a dataDir or a databaseUrl');
  return new JsonlMemoryStore(location.dataDir, logger);
}

/** How a server's service thread opens its part (src/threads/service-thread.ts). */
export interface ThreadPart {
  /** The encoder, which the process's main thread runs for every thread (a port to it). */
  embedder: Embedder;
  /** The users this thread answers for: it loads only these at the start. */
  owns: (userId: string) => boolean;
  /** Its share of MEMORYPOOL_CACHE_MB (the users are spread evenly over the threads). */
  cacheShare: number;
}

export async function openService(
  config: Config,
  options: { role: ServiceRole; part?: ThreadPart } & Pick<MemoryServiceOptions, 'indexFlushDelayMs'>,
): Promise<OpenedService> {
  const server = options.role === 'server';
  const logger = createLogger(server || config.logLevel !== 'info' ? config.logLevel : 'warn');
  const { dataDir, databaseUrl, cacheBytes } = storeOptions(config);
  // Now, not at a user's first Add: without the native index build nothing could be served.
  loadHnswlib();
  // A server delivers the webhooks: their file is checked before anything loads.
  const webhooks = server && config.webhooksFile !== undefined ? readWebhooksFile(config.webhooksFile) : [];
  // Before the encoder starts: a reranker folder that is not one fails the start here, in one line.
  const reranker = createReranker(config);
  const embedder = options.part?.embedder ?? createEmbedder(config);
  let service: MemoryService;
  try {
    await reranker?.ready();
    service = await MemoryService.open({
      store: openStore({ dataDir, databaseUrl }, logger),
      cacheBytes: cacheBytes === undefined || options.part === undefined ? cacheBytes : Math.floor(cacheBytes * options.part.cacheShare),
      owns: options.part?.owns,
      embedder,
      logger,
      preload: server,
      weights: serviceWeights(config),
      rerank: reranker ? { reranker, top: config.rerankTop, weight: config.rerankWeight } : undefined,
      indexFlushDelayMs: options.indexFlushDelayMs,
      webhooks,
      webhookTiming: { retryBaseMs: config.webhooksRetryMs },
    });
  } catch (error) {
    // The encoder's thread would otherwise keep a command that failed to open (no model, say) alive.
    await Promise.all([embedder.close(), reranker?.close()]);
    throw error;
  }
  await takeInLegacyMemories(service, logger);
  return {
    service,
    embedder,
    logger,
    close: async () => {
      await service.close();
      await Promise.all([embedder.close(), reranker?.close()]);
    },
  };
}
