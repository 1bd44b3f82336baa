import { storeOptions, type Config } from '../config.js';
import { createEmbedder, serviceWeights } from '../embedding/create-embedder.js';
import { createLogger } from '../logger.js';
import { MemoryService, type MemoryServiceOptions } from '../memory/memory-service.js';
import { takeInLegacyMemories } from '../protocol/legacy-take-in.js';

/**
 * The service a command started from the shell runs on (the CLI's data commands, `memorypool
 * mcp`): the data directory, or PostgreSQL when a database URL is set, like any replica, within
 * the cache budget. Users load when the command first touches them. stdout belongs to the
 * command, so logs (to stderr) start at warn unless another level was asked for.
 */
export async function openCommandService(
  config: Config,
  options: Pick<MemoryServiceOptions, 'indexFlushDelayMs'> = {},
): Promise<{ service: MemoryService; close(): Promise<void> }> {
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  const embedder = createEmbedder(config);
  const service = await MemoryService.open({ ...storeOptions(config), embedder, logger, preload: false, weights: serviceWeights(config), ...options });
  await takeInLegacyMemories(service, logger);
  return {
    service,
    close: async () => {
      await service.close();
      await embedder.close();
    },
  };
}
