/**
 * The longer run of the store differential (test/store/store-differential.test.ts runs 300 in CI):
 *
 *   npm run bench:stores -- [--requests 3000] [--seed <n>] [--database-url <postgres://...>]
 *
 * Sends one seeded sequence of valid, odd and invalid requests over every door to a JSONL-backed
 * and a PostgreSQL-backed app (a throwaway server unless --database-url names one, whose database
 * must be empty), then prints a JSON summary: statuses, 5xx per store, the requests whose answers
 * differ (the first ten) and whether the two exports hold the same memories. The exit code is 1
 * when the stores disagreed or either answered a 5xx. Run through tsx: it drives the test
 * suite's generator (test/support/request-sequence.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { closeSide, openSide, runDifferential } from '../test/support/store-differential.js';
import { startThrowawayPostgres } from './throwaway-postgres.js';

const { values } = parseArgs({ options: { requests: { type: 'string', default: '3000' }, seed: { type: 'string' }, 'database-url': { type: 'string' } } });
const seed = values.seed !== undefined ? Number(values.seed) : Math.floor(Math.random() * 2 ** 31);
const requests = Number(values.requests);

const dataDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-differential-'));
const server = values['database-url'] ? null : await startThrowawayPostgres({ fsync: false });
const databaseUrl = values['database-url'] ?? (await server!.createDatabase('differential'));
const jsonl = await openSide('jsonl', { dataDir });
const postgres = await openSide('postgres', { databaseUrl });
const started = Date.now();
try {
  process.stderr.write(`store differential: ${requests} requests, seed ${seed}\n`);
  const result = await runDifferential(jsonl, postgres, seed, requests);
  const summary = { ...result, seconds: Math.round((Date.now() - started) / 100) / 10, differences: result.differences.length, first_differences: result.differences.slice(0, 10) };
  process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  process.exitCode = result.differences.length > 0 || result.exportDifference !== null || result.serverErrors.jsonl + result.serverErrors.postgres > 0 ? 1 : 0;
} finally {
  await closeSide(jsonl);
  await closeSide(postgres);
  await server?.destroy();
  await rm(dataDir, { recursive: true, force: true });
}
