import { tempDir } from './helper.js';
import { freshDatabase } from './postgres.js';
import { startServerProcess, type ServerProcess } from './server-process.js';

/**
 * Two server processes on one store: one data directory, or two replicas of one database, each
 * started with `env` (and the store's own variables).
 */
export const TWO_PROCESSES: Array<[string, (env?: Record<string, string>) => Promise<[ServerProcess, ServerProcess]>]> = [
  ['JSONL, two processes on one data directory', async (env = {}) => {
    const dataDir = await tempDir();
    return Promise.all([startServerProcess({ dataDir, env }), startServerProcess({ dataDir, env })]);
  }],
  ['PostgreSQL, two replica processes', async (env = {}) => {
    const both = { ...env, MEMORYPOOL_DATABASE_URL: await freshDatabase() };
    return Promise.all([startServerProcess({ dataDir: await tempDir(), env: both }), startServerProcess({ dataDir: await tempDir(), env: both })]);
  }],
];
