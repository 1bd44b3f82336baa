import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { createError } from '../errors.js';
import type { EmbedOptions, Embedder } from './embedder.js';
import { createLocalEncoder, type LocalEncoderOptions } from './local-encoder.js';
import { encoderPrefix } from './onnx-embedder.js';
import { SentenceTransformerEmbedder } from './sentence-transformer-embedder.js';

interface Pending {
  count: number;
  onRun?: EmbedOptions['onRun'];
  resolve: (vectors: Float32Array[]) => void;
  reject: (error: unknown) => void;
}

/**
 * The local ONNX encoder (USE-lite or a model the user brings, see local-encoder.ts) on a worker thread (see embedder-worker.ts), so encoding runs beside the
 * event loop instead of on it. A worker that dies fails the calls in flight with
 * EMBEDDER_UNAVAILABLE (503) and is started again on the next call.
 */
export class WorkerEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  /** Tokens the encoder reads at most per text, when it is not USE-lite's 128 (a brought model's max_seq_length). */
  readonly maxTokens: number | undefined;
  private readonly options: LocalEncoderOptions;
  private worker: Worker | null = null;
  private loaded: Promise<void> | null = null;
  /** The current worker has loaded its model. */
  private isLoaded = false;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(options: LocalEncoderOptions = {}) {
    this.options = options;
    // Identity only: constructing an encoder loads no model.
    const identity = createLocalEncoder(options);
    this.modelId = identity.modelId;
    this.dimensions = identity.dimensions;
    this.maxTokens = identity instanceof SentenceTransformerEmbedder ? identity.layout.maxTokens : undefined;
  }

  ready(): Promise<void> {
    this.start();
    return this.loaded!;
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    // Posted in this very call once the model is up (no await before it): a Search scores its
    // vector-free half while the thread encodes, and that overlap needs the text sent first.
    if (!this.isLoaded) await this.ready();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { count: texts.length, onRun: options.onRun, resolve, reject });
      // Only what the encoder reads crosses to the thread: a 7 MB text is not copied whole.
      this.worker!.postMessage({ id, texts: texts.map((text) => encoderPrefix(text)), priority: options.priority });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    this.isLoaded = false;
    if (worker) await worker.terminate();
  }

  private start(): void {
    if (this.closed) throw createError('EMBEDDER_UNAVAILABLE', 'The embedder was closed');
    if (this.worker) return;
    holdOnnxRuntime();
    const entry = workerEntry();
    const worker = new Worker(entry.file, { workerData: this.options, eval: entry.eval });
    this.worker = worker;
    this.loaded = new Promise<void>((resolve, reject) => {
      const onMessage = (message: { id: number; ready?: boolean; error?: string; vectors?: Float32Array; startedAt?: number; endedAt?: number }) => {
        if (message.id === 0) {
          if (!message.ready) {
            reject(createError('EMBEDDER_UNAVAILABLE', message.error ?? 'The embedder failed to load'));
            return;
          }
          if (this.worker === worker) this.isLoaded = true;
          resolve();
          return;
        }
        const call = this.pending.get(message.id);
        if (!call) return;
        this.pending.delete(message.id);
        if (message.error !== undefined || !message.vectors) {
          call.reject(createError('EMBEDDER_UNAVAILABLE', `Embedder failed: ${message.error ?? 'no vectors'}`));
          return;
        }
        if (call.onRun && message.startedAt !== undefined && message.endedAt !== undefined) call.onRun(message.startedAt - performance.timeOrigin, message.endedAt - performance.timeOrigin);
        const vectors: Float32Array[] = [];
        for (let i = 0; i < call.count; i++) vectors.push(message.vectors.subarray(i * this.dimensions, (i + 1) * this.dimensions));
        call.resolve(vectors);
      };
      const onExit = (code: number) => {
        if (this.worker === worker) {
          this.worker = null;
          this.isLoaded = false;
        }
        const error = createError('EMBEDDER_UNAVAILABLE', `The embedder thread stopped (exit code ${code})`);
        reject(error);
        for (const call of this.pending.values()) call.reject(error);
        this.pending.clear();
      };
      worker.on('message', onMessage);
      worker.on('error', () => undefined);
      worker.on('exit', onExit);
    });
    // A failed load is reported to the caller of ready(); nothing else awaits it.
    this.loaded.catch(() => undefined);
  }
}

let onnxRuntimeHeld = false;

/**
 * Loads onnxruntime-node's addon on this thread too, once, and keeps it: the addon registers
 * itself only when first loaded into the process, so once every thread that loaded it has ended
 * (an encoder thread died, or the last copy closed), loading it again fails with "Module did not
 * self-register" and a restarted encoder thread could never encode again (measured: every call
 * 503 after one thread's death). Held here it stays registered for the process (~31 ms, once).
 */
export function holdOnnxRuntime(): void {
  if (onnxRuntimeHeld) return;
  onnxRuntimeHeld = true;
  createRequire(import.meta.url)('onnxruntime-node');
}

/**
 * The compiled worker beside this file; when the sources run directly (tests, through tsx), a
 * bootstrap that registers tsx's loader in the worker and then imports the TypeScript worker.
 */
export function workerEntry(name = 'embedder-worker'): { file: URL | string; eval: boolean } {
  const compiled = new URL(`./${name}.js`, import.meta.url);
  if (existsSync(fileURLToPath(compiled))) return { file: compiled, eval: false };
  const tsxApi = pathToFileURL(path.join(path.dirname(createRequire(import.meta.url).resolve('tsx/package.json')), 'dist/esm/api/index.mjs')).href;
  const source = new URL(`./${name}.ts`, import.meta.url).href;
  return { file: `import(${JSON.stringify(tsxApi)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(source)}); })`, eval: true };
}
