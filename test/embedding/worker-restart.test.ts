import type { Worker } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { WorkerEmbedder } from '../../src/embedding/worker-embedder.js';

// The real model (models/use-lite). Nothing else in this file loads onnxruntime on this thread:
// what is tested is that an encoder thread started after the last one died can load it again.

describe('WorkerEmbedder after its thread dies', () => {
  const encoder = new WorkerEmbedder({ precision: 'int8', intraOpThreads: 1 });
  afterAll(() => encoder.close());

  it('fails the call in flight with EMBEDDER_UNAVAILABLE, then starts a thread that encodes again', async () => {
    const [before] = await encoder.embed(['the dog is called Max']);
    const thread = (encoder as unknown as { worker: Worker }).worker;
    const inFlight = encoder.embed(['a call the dying thread never answers']);
    await thread.terminate();
    await expect(inFlight).rejects.toMatchObject({ code: 'EMBEDDER_UNAVAILABLE' });
    const [after] = await encoder.embed(['the dog is called Max']);
    let similarity = 0;
    for (let i = 0; i < before.length; i++) similarity += before[i]! * after[i]!;
    expect(similarity).toBeGreaterThan(0.99999);
  });
});
