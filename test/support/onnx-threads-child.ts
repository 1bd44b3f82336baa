/**
 * Run by test/embedding/onnx-threads.test.ts in a process of its own: opens, uses and closes the
 * encoder and a tiny reranker three times each, in turn, then prints what each round answered
 * and which thread answered it as JSON and exits by itself (no process.exit: a parked thread must
 * not hold the process open).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { createReranker } from '../../src/embedding/create-reranker.js';
import { WorkerEmbedder } from '../../src/embedding/worker-embedder.js';
import { writeTinyCrossEncoder } from './tiny-cross-encoder.js';

const root = await mkdtemp(path.join(os.tmpdir(), 'memorypool-onnx-threads-'));
const dir = path.join(root, 'reranker');
await writeTinyCrossEncoder(dir);
const threadOf = (owner: unknown) => (owner as { worker: Worker }).worker.threadId;
const rounds: { encoderThread: number; rerankerThread: number; first: number; logits: number[] }[] = [];
for (let round = 0; round < 3; round++) {
  const encoder = new WorkerEmbedder({ precision: 'int8', intraOpThreads: 1 });
  const [vector] = await encoder.embed(['the dog is called Max']);
  const encoderThread = threadOf(encoder);
  await encoder.close();
  const reranker = createReranker({ rerankerDir: dir })!;
  const logits = Array.from(await reranker.score('the dog', ['my dog went to the park', 'coffee']));
  const rerankerThread = threadOf(reranker);
  await reranker.close();
  rounds.push({ encoderThread, rerankerThread, first: vector![0]!, logits });
}
const closed = new WorkerEmbedder({ precision: 'int8', intraOpThreads: 1 });
await closed.close();
const refused = await closed.embed(['after close']).then(() => 'answered', (error: Error) => error.message);
await rm(root, { recursive: true, force: true });
process.stdout.write(JSON.stringify({ rounds, refused }) + '\n');
