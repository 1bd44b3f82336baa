import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encoderDenseWeight } from '../../src/embedding/create-embedder.js';
import { BROUGHT_ENCODER_DENSE_WEIGHT, DEFAULT_RETRIEVAL_WEIGHTS } from '../../src/retrieval/retrieval-config.js';
import { writeTinyBert } from '../support/tiny-bert.js';

describe('encoderDenseWeight', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-dense-weight-'));
    await writeTinyBert(dir);
  });
  afterAll(() => rm(dir, { recursive: true, force: true }));

  it('gives a brought sentence-transformers model the larger dense share, USE-lite the measured one', () => {
    expect(BROUGHT_ENCODER_DENSE_WEIGHT).toBeGreaterThan(DEFAULT_RETRIEVAL_WEIGHTS.denseWeight);
    expect(encoderDenseWeight({ embedder: 'onnx', modelDir: dir })).toBe(BROUGHT_ENCODER_DENSE_WEIGHT);
    expect(encoderDenseWeight({ embedder: 'onnx' })).toBe(DEFAULT_RETRIEVAL_WEIGHTS.denseWeight);
    expect(encoderDenseWeight({ embedder: 'onnx', modelDir: path.resolve('models/use-lite') })).toBe(DEFAULT_RETRIEVAL_WEIGHTS.denseWeight);
    expect(encoderDenseWeight({ embedder: 'hash', modelDir: dir })).toBe(DEFAULT_RETRIEVAL_WEIGHTS.denseWeight);
  });

  it('lets MEMORYPOOL_DENSE_WEIGHT decide when set', () => {
    expect(encoderDenseWeight({ embedder: 'onnx', modelDir: dir, denseWeight: 0.3 })).toBe(0.3);
    expect(encoderDenseWeight({ embedder: 'onnx', denseWeight: 0 })).toBe(0);
  });
});
