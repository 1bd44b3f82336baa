import type { Worker } from 'node:worker_threads';
import { createError } from '../errors.js';
import type { EmbedOptions, Embedder } from './embedder.js';
import { createLocalEncoder, type LocalEncoderOptions } from './local-encoder.js';
import { encoderPrefix } from './onnx-embedder.js';
import { openOnnxThread, parkOnnxThread } from './onnx-threads.js';
import { SentenceTransformerEmbedder } from './sentence-transformer-embedder.js';

/** The module embedder-worker.ts compiles to, beside onnx-threads.ts. */
const EMBEDDER_WORKER = 'embedder-worker';

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
  /** Rejects the current thread's load, when it is closed before it loaded. */
  private failLoad: ((error: unknown) => void) | null = null;

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
    if (!worker) return;
    // Parked, never terminated (onnx-threads.ts says why); reusable once loaded with nothing in flight.
    parkOnnxThread(EMBEDDER_WORKER, this.options, worker, this.isLoaded && this.pending.size === 0);
    this.isLoaded = false;
    const error = createError('EMBEDDER_UNAVAILABLE', 'The embedder was closed');
    this.failLoad?.(error);
    for (const call of this.pending.values()) call.reject(error);
    this.pending.clear();
  }

  private start(): void {
    if (this.closed) throw createError('EMBEDDER_UNAVAILABLE', 'The embedder was closed');
    if (this.worker) return;
    const { worker, loaded } = openOnnxThread(EMBEDDER_WORKER, this.options);
    this.worker = worker;
    this.loaded = new Promise<void>((resolve, reject) => {
      this.failLoad = reject;
      if (loaded) {
        this.isLoaded = true;
        resolve();
      }
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
