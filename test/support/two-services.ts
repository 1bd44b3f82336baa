import type { MemoryService } from '../../src/memory/memory-service.js';
import { openService, tempDir, type TestServiceOptions } from './helper.js';
import { freshDatabase } from './postgres.js';

/**
 * Two services on one store, for `describe.each`: two processes' worth of caches on one JSONL
 * data directory, or two replicas of one PostgreSQL database. A write on one must be seen by
 * the next read on the other.
 */
export const TWO_SERVICES: Array<[string, (options?: TestServiceOptions) => Promise<[MemoryService, MemoryService]>]> = [
  ['JSONL, two services on one data directory', async (options = {}) => {
    const dataDir = await tempDir();
    return [await openService({ ...options, dataDir }), await openService({ ...options, dataDir })];
  }],
  ['PostgreSQL, two replicas', async (options = {}) => {
    const databaseUrl = await freshDatabase();
    return [await openService({ ...options, databaseUrl }), await openService({ ...options, databaseUrl })];
  }],
];
