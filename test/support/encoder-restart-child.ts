/**
 * Run by test/embedding/worker-embedder.restart.test.ts in a process of its own: encodes, ends the encoder
 * thread (as a thread that died), encodes again, and prints both vectors' cosine as JSON.
 */
import type { Worker } from 'node:worker_threads';
import { WorkerEmbedder } from '../../src/embedding/worker-embedder.js';

const encoder = new WorkerEmbedder({ precision: 'int8', intraOpThreads: 1 });
const [before] = await encoder.embed(['the dog is called Max']);
await (encoder as unknown as { worker: Worker }).worker.terminate();
try {
  const [after] = await encoder.embed(['the dog is called Max']);
  let cosine = 0;
  for (let i = 0; i < before.length; i++) cosine += before[i]! * after[i]!;
  process.stdout.write(JSON.stringify({ cosine }) + '\n');
} catch (error) {
  process.stdout.write(JSON.stringify({ error: (error as Error).message }) + '\n');
}
await encoder.close();
