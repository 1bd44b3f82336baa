import type { Worker } from 'node:worker_threads';
import { createError } from '../errors.js';
import { readRerankerLayout, type CrossEncoderOptions } from './cross-encoder.js';
import type { Reranker } from './reranker.js';
import { openOnnxThread, parkOnnxThread } from './onnx-threads.js';

/** The module reranker-worker.ts compiles to, beside onnx-threads.ts. */
const RERANKER_WORKER = 'reranker-worker';

interface Pending {
  count: number;
  resolve: (logits: Float32Array) => void;
  reject: (error: unknown) => void;
}

/**
 * The cross-encoder (cross-encoder.ts) on a worker thread (reranker-worker.ts), so reranking runs
 * beside the event loop instead of on it. Constructing reads the folder's layout (a folder that
 * is no cross-encoder fails here, at the start) and loads no model. A thread that dies fails the
 * calls in flight with RERANKER_UNAVAILABLE (503) and is started again on the next call.
 */
export class WorkerReranker implements Reranker {
  readonly modelId: string;
  private readonly options: CrossEncoderOptions;
  private worker: Worker | null = null;
  private loaded: Promise<void> | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;
  /** The current thread has loaded its model. */
  private isLoaded = false;
  /** Rejects the current thread's load, when it is closed before it loaded. */
  private failLoad: ((error: unknown) => void) | null = null;

  constructor(options: CrossEncoderOptions) {
    this.options = options;
    this.modelId = readRerankerLayout(options).modelId;
  }

  ready(): Promise<void> {
    this.start();
    return this.loaded!;
  }

  async score(query: string, passages: readonly string[]): Promise<Float32Array> {
    if (passages.length === 0) return new Float32Array(0);
    await this.ready();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { count: passages.length, resolve, reject });
      this.worker!.postMessage({ id, query, passages });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = null;
    if (!worker) return;
    // Parked, never terminated (onnx-threads.ts says why); reusable once loaded with nothing in flight.
    parkOnnxThread(RERANKER_WORKER, this.options, worker, this.isLoaded && this.pending.size === 0);
    this.isLoaded = false;
    const error = createError('RERANKER_UNAVAILABLE', 'The reranker was closed');
    this.failLoad?.(error);
    for (const call of this.pending.values()) call.reject(error);
    this.pending.clear();
  }

  private start(): void {
    if (this.closed) throw createError('RERANKER_UNAVAILABLE', 'The reranker was closed');
    if (this.worker) return;
    const { worker, loaded } = openOnnxThread(RERANKER_WORKER, this.options);
    this.worker = worker;
    this.loaded = new Promise<void>((resolve, reject) => {
      this.failLoad = reject;
      if (loaded) {
        this.isLoaded = true;
        resolve();
      }
      worker.on('message', (message: { id: number; ready?: boolean; error?: string; logits?: Float32Array }) => {
        if (message.id === 0) {
          if (message.ready) {
            if (this.worker === worker) this.isLoaded = true;
            resolve();
          } else reject(createError('RERANKER_UNAVAILABLE', message.error ?? 'The reranker failed to load'));
          return;
        }
        const call = this.pending.get(message.id);
        if (!call) return;
        this.pending.delete(message.id);
        if (message.error !== undefined || !message.logits || message.logits.length !== call.count) {
          call.reject(createError('RERANKER_UNAVAILABLE', `Reranker failed: ${message.error ?? 'wrong number of scores'}`));
        } else {
          call.resolve(message.logits);
        }
      });
      worker.on('error', () => undefined);
      worker.on('exit', (code: number) => {
        if (this.worker === worker) {
          this.worker = null;
          this.isLoaded = false;
        }
        const error = createError('RERANKER_UNAVAILABLE', `The reranker thread stopped (exit code ${code})`);
        reject(error);
        for (const call of this.pending.values()) call.reject(error);
        this.pending.clear();
      });
    });
    // A failed load is reported to the caller of ready(); nothing else awaits it.
    this.loaded.catch(() => undefined);
  }
}
