import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';

/**
 * The threads onnxruntime-node runs on (the encoder's, embedder-worker.ts, and the reranker's,
 * reranker-worker.ts), which are never terminated once started. onnxruntime-node 1.14 corrupts
 * the heap when a thread loads a model after another thread that had one was terminated:
 * `free(): invalid pointer`, a segfault or an abort, in 5 of 10 runs of a process that opens and
 * closes three rerankers in turn, 2 of 10 with two, 3 of 8 for the encoder (none while they stay
 * open, nor when they are all closed at the end). So closing an encoder or a reranker parks its
 * thread instead: unref'd (the process may exit), its model still loaded, handed to the next
 * opener of the same model with the same options. A process holds at most one idle thread per
 * model and options it has closed and not reopened.
 */

const parked = new Map<string, Worker[]>();

/** An owner's events: removeAllListeners() would also drop those Node's Worker keeps for itself. */
const OWNER_EVENTS = ['message', 'messageerror', 'error', 'exit', 'online'] as const;

function dropOwner(worker: Worker): void {
  for (const event of OWNER_EVENTS) worker.removeAllListeners(event);
}

function keyOf(name: string, workerData: unknown): string {
  return `${name}\u0000${JSON.stringify(workerData)}`;
}

/**
 * A thread running `name` (a module beside this file) on `workerData`: a parked one that loaded
 * the same model (`loaded` true: it will not post its ready message again), or a new one.
 */
export function openOnnxThread(name: string, workerData: unknown): { worker: Worker; loaded: boolean } {
  holdOnnxRuntime();
  const key = keyOf(name, workerData);
  const idle = parked.get(key);
  const worker = idle?.pop();
  if (idle && idle.length === 0) parked.delete(key);
  if (worker) {
    dropOwner(worker);
    worker.ref();
    return { worker, loaded: true };
  }
  const entry = workerEntry(name);
  return { worker: new Worker(entry.file, { workerData, eval: entry.eval }), loaded: false };
}

/**
 * Instead of `terminate()`: the thread stops keeping the process alive and, when `reusable` (its
 * model loaded and no call of the closing owner still in flight, whose answer would reach the
 * next owner), waits for the next opener of the same model. A thread not reusable idles until
 * the process ends. A parked thread that dies leaves the park.
 */
export function parkOnnxThread(name: string, workerData: unknown, worker: Worker, reusable: boolean): void {
  dropOwner(worker);
  worker.on('error', () => undefined);
  worker.unref();
  if (!reusable) return;
  const key = keyOf(name, workerData);
  const idle = parked.get(key) ?? [];
  idle.push(worker);
  parked.set(key, idle);
  worker.once('exit', () => {
    const still = parked.get(key);
    if (!still) return;
    const at = still.indexOf(worker);
    if (at >= 0) still.splice(at, 1);
    if (still.length === 0) parked.delete(key);
  });
}

let onnxRuntimeHeld = false;

/**
 * Loads onnxruntime-node's addon on this thread too, once, and keeps it: the addon registers
 * itself only when first loaded into the process, so once every thread that loaded it has ended
 * (an encoder thread died), loading it again fails with "Module did not self-register" and a
 * restarted encoder thread could never encode again (measured: every call 503 after one
 * thread's death). Held here it stays registered for the process (~31 ms, once).
 */
export function holdOnnxRuntime(): void {
  if (onnxRuntimeHeld) return;
  onnxRuntimeHeld = true;
  createRequire(import.meta.url)('onnxruntime-node');
}

/**
 * The compiled worker beside this file (or the module `beside` names); when the sources run directly (tests, through tsx), a
 * bootstrap that registers tsx's loader in the worker and then imports the TypeScript worker.
 */
export function workerEntry(name: string, beside: string = import.meta.url): { file: URL | string; eval: boolean } {
  const compiled = new URL(`./${name}.js`, beside);
  if (existsSync(fileURLToPath(compiled))) return { file: compiled, eval: false };
  const tsxApi = pathToFileURL(path.join(path.dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
  const source = new URL(`./${name}.ts`, beside).href;
  return { file: `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); })`, eval: true };
}
