import { afterAll, describe, expect, it } from 'vitest';
import { MAX_TEXT_CHARS, OnnxEmbedder } from '../../src/embedding/onnx-embedder.js';
import { WorkerEmbedder } from '../../src/embedding/worker-embedder.js';

// Uses the real model in models/use-lite, built by `npm run build:model` (part of npm install).

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

describe('WorkerEmbedder', () => {
  const worker = new WorkerEmbedder({ precision: 'int8', intraOpThreads: 1 });
  const local = new OnnxEmbedder({ precision: 'int8', intraOpThreads: 1 });
  afterAll(async () => {
    await Promise.all([worker.close(), local.close()]);
  });

  it('gives every text of a call, huge ones included, the vectors the model gives in this thread', async () => {
    const huge = 'We met at the pottery class and talked for hours. '.repeat(20_000);
    const texts = ['first text', 'second, longer text about a trip to Japan', huge, 'fourth'];
    const [fromWorker, here] = [await worker.embed(texts), await local.embed([...texts.slice(0, 2), huge.slice(0, MAX_TEXT_CHARS), texts[3]!])];
    expect(worker.modelId).toBe(local.modelId);
    fromWorker.forEach((v, i) => expect(dot(v, here[i]!)).toBeGreaterThan(0.99999));
  });
});
