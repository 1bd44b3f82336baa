import { parentPort, workerData } from 'node:worker_threads';
import type { EmbedOptions } from './embedder.js';
import { createLocalEncoder, type LocalEncoderOptions } from './local-encoder.js';
import { nameThisThread } from '../telemetry/thread-name.js';

/**
 * Runs the ONNX model on its own thread. onnxruntime-node executes a session synchronously on
 * the thread that calls it, so on the main thread every batch would stall HTTP and search work.
 * Messages: `{ id, texts, priority }` in (a query's priority picks a model's query prefix); `{ id, vectors, startedAt, endedAt }` (one flat Float32Array, transferred; the run's epoch ms) or
 * `{ id, error }` out; `{ id: 0, ready: true }` once the model has loaded.
 */
nameThisThread('mp-encoder');
const embedder = createLocalEncoder(workerData as LocalEncoderOptions);
const port = parentPort!;

embedder.ready().then(
  () => port.postMessage({ id: 0, ready: true }),
  (error: Error) => port.postMessage({ id: 0, error: error.message }),
);

port.on('message', (message: { id: number; texts: string[]; priority?: EmbedOptions['priority'] }) => {
  // Wall-clock (epoch) milliseconds: the main thread's performance.now() counts from another origin.
  const startedAt = performance.timeOrigin + performance.now();
  embedder.embed(message.texts, { priority: message.priority }).then(
    (vectors) => {
      const endedAt = performance.timeOrigin + performance.now();
      const flat = new Float32Array(vectors.length * embedder.dimensions);
      vectors.forEach((vector, i) => flat.set(vector, i * embedder.dimensions));
      port.postMessage({ id: message.id, vectors: flat, startedAt, endedAt }, [flat.buffer]);
    },
    (error: Error) => port.postMessage({ id: message.id, error: error.message }),
  );
});
