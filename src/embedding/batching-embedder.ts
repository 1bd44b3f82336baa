import type { EmbedOptions, Embedder } from './embedder.js';

interface Job {
  vectors: Float32Array[];
  remaining: number;
  failed: boolean;
  resolve: (vectors: Float32Array[]) => void;
  reject: (error: unknown) => void;
}

interface Item {
  job: Job;
  index: number;
  text: string;
  queuedAt: number;
}

/** Told of each model call (the metrics): its size, each text's wait in the queue, its run time. */
export interface BatchObserver {
  batch(size: number, waitsMs: readonly number[], runMs: number): void;
}

/**
 * Runs one model call at a time over texts pooled from every concurrent caller. Sixty-four Adds
 * of twenty messages each would otherwise start sixty-four small runs that fight over two cores.
 * Each run takes the oldest waiting text and the `maxBatch` texts nearest it in length, so a
 * batch carries little padding (the encoder's cost follows the longest text in it) and no text
 * waits forever. Query texts (searches) run before any queued ingest text.
 */
export class BatchingEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly inner: Embedder;
  private readonly maxBatch: number;
  private urgent: Item[] = [];
  private normal: Item[] = [];
  private running = false;
  /** Optional; set by whoever exports the figures (the HTTP app's /metrics). */
  observer: BatchObserver | null = null;

  constructor(inner: Embedder, options: { maxBatch?: number } = {}) {
    this.inner = inner;
    this.modelId = inner.modelId;
    this.dimensions = inner.dimensions;
    this.maxBatch = options.maxBatch ?? 64;
  }

  ready(): Promise<void> {
    return this.inner.ready();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const job: Job = { vectors: new Array(texts.length), remaining: texts.length, failed: false, resolve, reject };
      const queue = options.priority === 'query' ? this.urgent : this.normal;
      const queuedAt = performance.now();
      texts.forEach((text, index) => queue.push({ job, index, text, queuedAt }));
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (;;) {
        const batch = this.takeBatch();
        if (batch.length === 0) return;
        const started = performance.now();
        try {
          const vectors = await this.inner.embed(batch.map((item) => item.text));
          this.observer?.batch(batch.length, batch.map((item) => started - item.queuedAt), performance.now() - started);
          batch.forEach((item, i) => {
            const { job } = item;
            if (job.failed) return;
            job.vectors[item.index] = vectors[i];
            if (--job.remaining === 0) job.resolve(job.vectors);
          });
        } catch (error) {
          for (const { job } of batch) {
            if (job.failed) continue;
            job.failed = true;
            job.reject(error);
          }
          // The failed callers' other texts need not run.
          this.urgent = this.urgent.filter((item) => !item.job.failed);
          this.normal = this.normal.filter((item) => !item.job.failed);
        }
      }
    } finally {
      this.running = false;
    }
  }

  private takeBatch(): Item[] {
    if (this.urgent.length > 0) return this.urgent.splice(0, this.maxBatch);
    if (this.normal.length <= this.maxBatch) return this.normal.splice(0, this.normal.length);
    const oldest = this.normal[0];
    const byLength = [...this.normal].sort((a, b) => a.text.length - b.text.length);
    const at = byLength.indexOf(oldest);
    const start = Math.max(0, Math.min(at - (this.maxBatch >> 1), byLength.length - this.maxBatch));
    const taken = new Set(byLength.slice(start, start + this.maxBatch));
    this.normal = this.normal.filter((item) => !taken.has(item));
    return [...taken];
  }
}
