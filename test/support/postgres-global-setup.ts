import type { TestProject } from 'vitest/node';
import { startThrowawayPostgres } from '../../bench/throwaway-postgres.js';

/**
 * One PostgreSQL server for the whole run; each suite makes its own database on it
 * (`test/support/postgres.ts`). `MEMORYPOOL_TEST_DATABASE_URL` names a server to use instead.
 * Never skipped: when no server can be had, every PostgreSQL suite fails with the reason (the
 * other suites still run, so one missing server does not hide what they would find).
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const external = process.env.MEMORYPOOL_TEST_DATABASE_URL;
  if (external !== undefined && external !== '') {
    project.provide('postgresUrl', external);
    return undefined;
  }
  try {
    const server = await startThrowawayPostgres({ fsync: false });
    project.provide('postgresUrl', server.url());
    return () => server.destroy();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    console.error(`[postgres] the throwaway PostgreSQL did not start; the PostgreSQL suites will fail: ${reason}`);
    project.provide('postgresUrl', '');
    project.provide('postgresError', reason);
    return undefined;
  }
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** A URL on the run's PostgreSQL server whose user may create databases ('' when none started). */
    postgresUrl: string;
    /** Why the run's PostgreSQL server did not start, when it did not. */
    postgresError?: string;
  }
}
