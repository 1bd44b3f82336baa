import type { TestProject } from 'vitest/node';
import { startThrowawayPostgres } from '../../bench/throwaway-postgres.js';

/**
 * One PostgreSQL server for the whole run; each suite makes its own database on it
 * (`test/support/postgres.ts`). `MEMORYPOOL_TEST_DATABASE_URL` names a server to use instead.
 * Never skipped: when no server can be had, the run fails here.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const external = process.env.MEMORYPOOL_TEST_DATABASE_URL;
  if (external !== undefined && external !== '') {
    project.provide('postgresUrl', external);
    return undefined;
  }
  const server = await startThrowawayPostgres({ fsync: false });
  project.provide('postgresUrl', server.url());
  return () => server.destroy();
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** A URL on the run's PostgreSQL server whose user may create databases. */
    postgresUrl: string;
  }
}
