import { Worker } from 'node:worker_threads';
import { createError } from '../errors.js';
import { readRerankerLayout, type CrossEncoderOptions } from './cross-encoder.js';
import type { Reranker } from './reranker.js';
import { holdOnnxRuntime, workerEntry } from './worker-embedder.js';

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
    if (worker) await worker.terminate();
  }

  private start(): void {
    if (this.closed) throw createError('RERANKER_UNAVAILABLE', 'The reranker was closed');
    if (this.worker) return;
    holdOnnxRuntime();
    const entry = workerEntry('reranker-worker');
    const worker = new Worker(entry.file, { workerData: this.options, eval: entry.eval });
    this.worker = worker;
    this.loaded = new Promise<void>((resolve, reject) => {
      worker.on('message', (message: { id: number; ready?: boolean; error?: string; logits?: Float32Array }) => {
        if (message.id === 0) {
          if (message.ready) resolve();
          else reject(createError('RERANKER_UNAVAILABLE', message.error ?? 'The reranker failed to load'));
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
        if (this.worker === worker) this.worker = null;
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
