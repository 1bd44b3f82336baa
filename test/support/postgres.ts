import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import type { UnitDraft } from '../../src/store/memory-store.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { register } from './helper.js';

/**
 * Databases for the PostgreSQL suites, on the run's server (started by
 * `postgres-global-setup.ts`, or `MEMORYPOOL_TEST_DATABASE_URL`). Each is new and empty, so suites
 * running at once never see each other's rows.
 */

export interface TestDatabase {
  readonly url: string;
  readonly name: string;
  /** Drops the database, disconnecting whoever is still connected. */
  drop(): Promise<void>;
}

/** A new, empty database; the caller drops it (use `freshDatabase` inside a test). */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = postgresServerUrl();
  const name = `memorypool_test_${randomBytes(6).toString('hex')}`;
  await adminQuery(serverUrl, `CREATE DATABASE ${name}`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () => adminQuery(serverUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  };
}

/** A new, empty database, dropped after the current test. */
export async function freshDatabase(): Promise<string> {
  const database = await createTestDatabase();
  register(database.drop);
  return database.url;
}

/** Runs queries on a database of the run's server, on a connection of its own. */
export async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A replica's store on the database, initialised (its migrations run), closed after the current test. */
export async function storeReplica(url: string): Promise<PostgresStore> {
  const store = new PostgresStore({ url, logger: silentLogger() });
  register(() => store.close());
  await store.init();
  return store;
}

let drafted = 0;
/** A memory to append straight to a store: ids `m-1`, `m-2`, ... and an 8-dimensional vector. */
export function storeDraft(userId: string, text = `memory ${drafted + 1}`, sessionId = 's1'): UnitDraft {
  drafted++;
  return {
    record: { id: `m-${drafted}`, user_id: userId, text, tags: [], importance: 0.5, source: 'add', created_at: new Date().toISOString(), session_id: sessionId, model: 'test-model' },
    vector: new Float32Array(8).fill(drafted),
  };
}

/** The run's server, or the reason it could not be started (global setup), as this suite's failure. */
export function postgresServerUrl(): string {
  const url = inject('postgresUrl');
  if (url === '') throw new Error(`no PostgreSQL server for this suite: ${inject('postgresError') ?? 'the global setup started none'}`);
  return url;
}

async function adminQuery(serverUrl: string, sql: string): Promise<void> {
  await withClient(serverUrl, async (client) => {
    await client.query(sql);
  });
}
