import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrossEncoder } from '../../src/embedding/cross-encoder.js';
import { expectedLogit, tokenId, writeTinyCrossEncoder, type TinyCrossEncoderWeights } from '../support/tiny-cross-encoder.js';

const ids = (text: string) => text.split(' ').map(tokenId);

describe('CrossEncoder (a tiny cross-encoder built by the test)', () => {
  let root: string;
  let dir: string;
  let weights: TinyCrossEncoderWeights;
  let reranker: CrossEncoder;

  beforeAll(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'memorypool-tiny-cross-encoder-'));
    dir = path.join(root, 'model');
    weights = await writeTinyCrossEncoder(dir);
    reranker = new CrossEncoder({ modelDir: dir });
    await reranker.ready();
  });
  afterAll(async () => {
    await reranker.close();
    await rm(root, { recursive: true, force: true });
  });

  it('scores each pair [CLS] query [SEP] passage [SEP] with token types 0 then 1, as the weights give it', async () => {
    const passages = ['my sister has a dog', 'we went to paris', 'the cat', 'coffee and cake for my birthday'];
    const logits = await reranker.score('who has a dog', passages);
    expect(logits.length).toBe(4);
    passages.forEach((passage, i) => expect(Math.abs(logits[i]! - expectedLogit(weights, ids('who has a dog'), ids(passage)))).toBeLessThan(1e-4));
    // The token types matter: the same words with the sides swapped score otherwise.
    const [swapped] = await reranker.score('my sister has a dog', ['who has a dog']);
    expect(Math.abs(swapped! - logits[0]!)).toBeGreaterThan(1e-3);
    expect(reranker.modelId).toBe('cross-encoder:tiny-cross-encoder:model');
  });

  it('tokenizes as the WordPiece tokenizer does (case, punctuation, word pieces)', async () => {
    const [logit] = await reranker.score('Who walked?', ['Dogs, walking.']);
    expect(Math.abs(logit! - expectedLogit(weights, ids('who walk ##ed ?'), ids('dogs , walk ##ing .')))).toBeLessThan(1e-4);
  });

  it('truncates a long pair longest first to the position table (64 tokens), keeping both [SEP]s', async () => {
    const long = Array.from({ length: 100 }, (_, i) => (i % 2 ? 'dog' : 'cat')).join(' ');
    const [logit] = await reranker.score('the dog', [long]);
    const kept = ids(long).slice(0, 64 - 3 - 2);
    expect(Math.abs(logit! - expectedLogit(weights, ids('the dog'), kept))).toBeLessThan(1e-4);
  });

  it('gives a call the same logits every time, and a pair about the same logit in any company (its passes are the call\'s own)', async () => {
    const passages = Array.from({ length: 70 }, (_, i) => ['my dog', 'the cat went to the park', 'a song on the piano at night', 'tea'][i % 4]! + ` ${['one', 'two', 'three'][i % 3]}`);
    const together = await reranker.score('where is the dog', passages);
    expect(Array.from(await reranker.score('where is the dog', passages))).toEqual(Array.from(together));
    // Not to the bit: a pass padded longer sums its tokens in another order. So the pairs of one
    // Search are never pooled with another's (reranker.ts), and its answer is the same under load.
    for (const i of [0, 5, 33, 69]) expect(Math.abs((await reranker.score('where is the dog', [passages[i]!]))[0]! - together[i]!)).toBeLessThan(1e-5);
  });

  it('runs a quantized file with int8 (the default precision) when that is the only one', async () => {
    const quantized = path.join(root, 'quantized');
    await writeTinyCrossEncoder(quantized, { quantizedOnly: true });
    expect(new CrossEncoder({ modelDir: quantized, precision: 'int8' }).modelId).toBe('cross-encoder:tiny-cross-encoder:model_quantized');
    expect(() => new CrossEncoder({ modelDir: quantized, precision: 'fp32' })).toThrow(/onnx\/model\.onnx not found/);
  });
});
