import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const clientSource = (file: string) => fileURLToPath(new URL(`packages/client/src/${file}`, import.meta.url));

export default defineConfig({
  resolve: {
    // The client package from its source, as the rest of src/ is tested (its dist/ is for the processes tests start).
    alias: [
      { find: /^memorypool-client$/, replacement: clientSource('index.ts') },
      { find: /^memorypool-client\/internal$/, replacement: clientSource('internal.ts') },
    ],
  },
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
