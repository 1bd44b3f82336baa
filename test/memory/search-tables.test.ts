import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openService, tempDir } from '../support/helper.js';

/**
 * A server's service prepares, while its encoder loads, what the first Search would read on its
 * own (src/memory/search-tables.ts): WordNet's index files among them. So a WordNet it cannot read
 * fails the start, where it would otherwise fail every Search; a service that loads nothing ahead
 * (the CLI, `openMemoryPool`) opens as before. The WordNet folder is read once per process, at its
 * first use: this file's (its own module instance) is the one below.
 */
describe('the search tables a server prepares at its start', () => {
  let missing: string;
  beforeAll(async () => {
    missing = `${await tempDir()}/no-wordnet`;
    process.env.MEMORYPOOL_WORDNET_DIR = missing;
  });
  afterAll(() => {
    delete process.env.MEMORYPOOL_WORDNET_DIR;
  });

  it('fail the start of a server whose WordNet cannot be read, naming the file', async () => {
    await expect(openService({ preload: true })).rejects.toThrow(`${missing}/index.`);
  });

  it('are not read by a service that loads users on first use: it opens', async () => {
    await expect(openService({ preload: false })).resolves.toBeDefined();
  });
});
