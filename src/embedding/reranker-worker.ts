import { parentPort, workerData } from 'node:worker_threads';
import { CrossEncoder, type CrossEncoderOptions } from './cross-encoder.js';

/**
 * Runs the cross-encoder on its own thread: onnxruntime-node executes a session synchronously on
 * the thread that calls it, and 50 pairs of a MiniLM take tens of milliseconds the event loop
 * must not wait through. Messages: `{ id, query, passages }` in; `{ id, logits }` (a
 * Float32Array, transferred) or `{ id, error }` out; `{ id: 0, ready: true }` (or `error`) once
 * the model has loaded. Calls are run one after the other, each its own passes.
 */
const reranker = new CrossEncoder(workerData as CrossEncoderOptions);
const port = parentPort!;

reranker.ready().then(
  () => port.postMessage({ id: 0, ready: true }),
  (error: Error) => port.postMessage({ id: 0, error: error.message }),
);

let queue: Promise<void> = Promise.resolve();
port.on('message', (message: { id: number; query: string; passages: string[] }) => {
  // One call at a time: a call's passes are never interleaved with another's.
  queue = queue.then(() =>
    reranker.score(message.query, message.passages).then(
      (logits) => port.postMessage({ id: message.id, logits }, [logits.buffer as ArrayBuffer]),
      (error: Error) => port.postMessage({ id: message.id, error: error.message }),
    ),
  );
});
