import type { EmbedOptions, Embedder } from './embedder.js';

interface Job {
  texts: readonly string[];
  resolve: (vectors: Float32Array[]) => void;
  reject: (error: unknown) => void;
}

/**
 * Runs one model call at a time and merges the texts of concurrent callers into it. Sixty-four
 * Adds of twenty messages each would otherwise start sixty-four small runs that fight over two
 * cores; merged, they fill batches of `maxBatch` that the model runs at full speed. Query
 * embeddings (searches) wait only for the batch in progress, never behind queued ingest work.
 */
export class BatchingEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly inner: Embedder;
  private readonly maxBatch: number;
  private readonly urgent: Job[] = [];
  private readonly normal: Job[] = [];
  private running = false;

  constructor(inner: Embedder, options: { maxBatch?: number } = {}) {
    this.inner = inner;
    this.modelId = inner.modelId;
    this.dimensions = inner.dimensions;
    this.maxBatch = options.maxBatch ?? 128;
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
      (options.priority === 'query' ? this.urgent : this.normal).push({ texts, resolve, reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      for (;;) {
        const jobs = this.takeBatch();
        if (jobs.length === 0) return;
        const texts = jobs.flatMap((job) => job.texts);
        try {
          const vectors = await this.inner.embed(texts);
          let offset = 0;
          for (const job of jobs) {
            job.resolve(vectors.slice(offset, offset + job.texts.length));
            offset += job.texts.length;
          }
        } catch (error) {
          for (const job of jobs) job.reject(error);
        }
      }
    } finally {
      this.running = false;
    }
  }

  /** Urgent jobs first, then whole jobs while they fit; a job larger than a batch goes alone. */
  private takeBatch(): Job[] {
    const taken: Job[] = [];
    let size = 0;
    for (const queue of [this.urgent, this.normal]) {
      while (queue.length > 0 && (taken.length === 0 || size + queue[0].texts.length <= this.maxBatch)) {
        const job = queue.shift()!;
        taken.push(job);
        size += job.texts.length;
      }
    }
    return taken;
  }
}
