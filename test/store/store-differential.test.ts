import { describe, expect, it } from 'vitest';
import { register, tempDir } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';
import { closeSide, openSide, runDifferential } from '../support/store-differential.js';

/**
 * Both stores, one answer: the same seeded sequence of valid, odd and invalid requests over every
 * door, sent to a JSONL-backed and a PostgreSQL-backed app, gets the same statuses and bodies, and
 * the two pools then export the same memories. MEMORYPOOL_DIFFERENTIAL_SEED replays a failure;
 * the longer run is `node --import tsx bench/store-differential.ts`.
 */
const REQUESTS = 300;

describe('the JSONL and the PostgreSQL store answer alike', () => {
  it(`${REQUESTS} seeded requests over every door: same statuses, same bodies, same export, no 5xx`, async () => {
    const seed = Number(process.env.MEMORYPOOL_DIFFERENTIAL_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const jsonl = await openSide('jsonl', { dataDir: await tempDir() });
    register(() => closeSide(jsonl));
    const postgres = await openSide('postgres', { databaseUrl: await freshDatabase() });
    register(() => closeSide(postgres));

    const result = await runDifferential(jsonl, postgres, seed, REQUESTS);
    const replay = `seed ${seed} (replay: MEMORYPOOL_DIFFERENTIAL_SEED=${seed})`;
    expect(result.differences.slice(0, 3), replay).toEqual([]);
    expect(result.serverErrors, replay).toEqual({ jsonl: 0, postgres: 0 });
    expect(result.exportDifference, replay).toBeNull();
    // The sequence did reach the stores: memories written and refusals of both kinds answered.
    expect(result.exported, replay).toBeGreaterThan(10);
    expect(result.statuses['200'] + (result.statuses['201'] ?? 0), replay).toBeGreaterThan(REQUESTS / 4);
    expect(result.statuses['400'] + result.statuses['422'], replay).toBeGreaterThan(10);
  });
});
