import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The installed-package test packs and installs (minutes): its own run, vitest.package.config.ts.
    exclude: ['dist/**', 'node_modules/**', 'test/install/fresh-app.test.ts'],
    // A throwaway PostgreSQL for the run (or MEMORYPOOL_TEST_DATABASE_URL); suites make their own databases on it.
    globalSetup: ['test/support/postgres-global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Suites that start servers and child processes share two cores; keep them from starving each other.
    maxWorkers: 2,
  },
});
