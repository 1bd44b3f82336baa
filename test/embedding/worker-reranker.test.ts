import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReranker } from '../../src/embedding/create-reranker.js';
import { WorkerReranker } from '../../src/embedding/worker-reranker.js';
import { writeTinyBert } from '../support/tiny-bert.js';
import { expectedLogit, tokenId, writeTinyCrossEncoder } from '../support/tiny-cross-encoder.js';

// No session on this thread: onnxruntime-node 1.14 may corrupt its heap when a session of the main
// thread is finalised while a worker's is made or torn down (seen as `free(): invalid pointer`
// once in eight runs with one here); the server keeps every session on a thread of its own.

const ids = (text: string) => text.split(' ').map(tokenId);

describe('WorkerReranker', () => {
  let root: string;
  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'memorypool-reranker-'));
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('scores on its own thread, concurrent calls each as it is alone', async () => {
    const dir = path.join(root, 'worker');
    const weights = await writeTinyCrossEncoder(dir);
    const worker = createReranker({ rerankerDir: dir })!;
    expect(worker).toBeInstanceOf(WorkerReranker);
    try {
      await worker.ready();
      const queries = ['the dog', 'a trip to london', 'my mother'];
      const passages = ['my dog went to the park', 'we went to london in may', 'my mother and father', 'coffee'];
      const alone = [];
      for (const query of queries) alone.push(Array.from(await worker.score(query, passages)));
      const concurrent = await Promise.all(queries.map((query) => worker.score(query, passages)));
      expect(concurrent.map((logits) => Array.from(logits))).toEqual(alone);
      passages.forEach((passage, i) => expect(Math.abs(alone[0]![i]! - expectedLogit(weights, ids('the dog'), ids(passage)))).toBeLessThan(1e-4));
    } finally {
      await worker.close();
    }
  });

  it('refuses at construction a folder that is not a cross-encoder export, naming what is missing', async () => {
    expect(() => createReranker({ rerankerDir: path.join(root, 'nowhere') })).toThrow(/MEMORYPOOL_RERANKER_DIR: .*nowhere is not a folder/);
    const empty = path.join(root, 'empty');
    await writeTinyCrossEncoder(empty);
    await rm(path.join(empty, 'tokenizer.json'));
    expect(() => createReranker({ rerankerDir: empty })).toThrow(expect.objectContaining({ code: 'RERANKER_UNAVAILABLE', message: expect.stringMatching(/incomplete: tokenizer\.json not found/) }));
    const twoLabels = path.join(root, 'two-labels');
    await writeTinyCrossEncoder(twoLabels);
    await writeFile(path.join(twoLabels, 'config.json'), JSON.stringify({ hidden_size: 16, id2label: { 0: 'NO', 1: 'YES' } }));
    expect(() => createReranker({ rerankerDir: twoLabels })).toThrow(/2 labels/);
  });

  it('fails to load (RERANKER_UNAVAILABLE) a sentence encoder given as a reranker: it has no logits', async () => {
    const encoder = path.join(root, 'encoder');
    await writeTinyBert(encoder);
    const reranker = createReranker({ rerankerDir: encoder })!;
    try {
      await expect(reranker.ready()).rejects.toMatchObject({ code: 'RERANKER_UNAVAILABLE', message: expect.stringMatching(/a cross-encoder needs input_ids and attention_mask in, logits out/) });
    } finally {
      await reranker.close();
    }
  });
});
