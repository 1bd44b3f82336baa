import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['dist/**', 'node_modules/**'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Suites that start servers and child processes share two cores; keep them from starving each other.
    maxWorkers: 2,
  },
});
