import { defineConfig } from 'vitest/config';

/**
 * The package as a user installs it (test/install/fresh-app.test.ts): `npm pack`, then installs
 * into a temporary application. Run by each leg of `.ci/run` after `npm test`.
 */
export default defineConfig({
  test: {
    include: ['test/install/fresh-app.test.ts'],
    testTimeout: 120_000,
    hookTimeout: 900_000,
  },
});
