import type { BatchObserver, EmbedOptions, Embedder } from './embedder.js';

export interface QueryVectorCacheOptions {
  /** Most query vectors kept (least recently used go first). Default 2048 (about 4 MiB). */
  maxEntries?: number;
  /** Longer query texts are not cached, so a huge query cannot pin its text in memory. Default 2048. */
  maxTextChars?: number;
}

/**
 * A bounded LRU of query vectors in front of an embedder: agents repeat queries often (the same
 * question each turn, retries), and a repeated query then costs no encoder time at all. Only
 * `priority: 'query'` calls use it; ingest texts are rarely repeated and would only evict.
 * Vectors depend on nothing but the text and the embedder, so entries never go stale.
 */
export class QueryVectorCache implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly inner: Embedder;
  private readonly maxEntries: number;
  private readonly maxTextChars: number;
  /** Map order is recency: a hit is re-inserted at the end, the first key is evicted. */
  private readonly entries = new Map<string, Float32Array>();
  hits = 0;
  misses = 0;

  constructor(inner: Embedder, options: QueryVectorCacheOptions = {}) {
    this.inner = inner;
    this.modelId = inner.modelId;
    this.dimensions = inner.dimensions;
    this.maxEntries = options.maxEntries ?? 2048;
    this.maxTextChars = options.maxTextChars ?? 2048;
  }

  ready(): Promise<void> {
    return this.inner.ready();
  }

  close(): Promise<void> {
    this.entries.clear();
    return this.inner.close();
  }

  loadedAll(): Promise<void> {
    return this.inner.loadedAll?.() ?? this.inner.ready();
  }

  copiesRunning(): number | undefined {
    return this.inner.copiesRunning?.();
  }

  observeBatches(observer: BatchObserver): void {
    this.inner.observeBatches?.(observer);
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (options.priority !== 'query' || this.maxEntries === 0) return this.inner.embed(texts, options);
    const out = new Array<Float32Array>(texts.length);
    const missing: number[] = [];
    texts.forEach((text, i) => {
      const cached = this.entries.get(text);
      if (cached === undefined) {
        missing.push(i);
        return;
      }
      this.hits++;
      this.entries.delete(text);
      this.entries.set(text, cached);
      // A copy: callers own the vectors they get.
      out[i] = cached.slice();
    });
    if (missing.length === 0) return out;
    this.misses += missing.length;
    const vectors = await this.inner.embed(missing.map((i) => texts[i]!), options);
    missing.forEach((textIndex, j) => {
      const vector = vectors[j]!;
      out[textIndex] = vector;
      const text = texts[textIndex]!;
      if (text.length > this.maxTextChars) return;
      this.entries.delete(text);
      this.entries.set(text, vector.slice());
      if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    });
    return out;
  }
}
