/**
 * The boundary between memorypool and whatever turns text into vectors.
 * Implementations: the local ONNX model (default), a deterministic hash embedder for tests,
 * and an OpenAI-compatible HTTP embedder for deployments that must use a hosted model.
 */
export interface Embedder {
  /** Identifies the model and its settings; a change means stored vectors must be re-embedded. */
  readonly modelId: string;
  readonly dimensions: number;
  /** Resolves once the embedder can encode (the model is loaded). */
  ready(): Promise<void>;
  /**
   * Encodes texts to L2-normalised vectors, in input order. Callers never pass empty or
   * whitespace-only strings (the ONNX model fails on zero tokens).
   */
  embed(texts: readonly string[], options?: EmbedOptions): Promise<Float32Array[]>;
  close(): Promise<void>;
  /**
   * Reports each model call to `observer` (the metrics): embedders that pool texts into calls
   * implement it, and a wrapper passes it on to what it wraps. Others have no calls to report.
   */
  observeBatches?(observer: BatchObserver): void;
  /**
   * Loads every part and resolves when each has, where `ready()` resolves earlier: an encoder pool
   * is ready with its first copy and starts the others only when a run asks for one
   * (`EmbedOptions.moreCopies`, encoder-pool.ts). Wrappers pass it on.
   */
  loadedAll?(): Promise<void>;
  /** Copies of the model loaded and taking calls, where there are several (an encoder pool). Wrappers pass it on. */
  copiesRunning?(): number | undefined;
}

/** Told of each model call (the metrics): its size, each text's wait in the queue, its run time. */
export interface BatchObserver {
  batch(size: number, waitsMs: readonly number[], runMs: number): void;
}

export interface EmbedOptions {
  /** `query`: a search waits on it, so it goes ahead of queued ingest work where batching applies. */
  priority?: 'query' | 'ingest';
  /**
   * Fairness key (the user id): where batching applies, waiting texts are served round-robin by
   * key within each priority, so one caller's flood does not delay the others. Default: one
   * shared key.
   */
  key?: string;
  /**
   * Told when the model ran, as the encoder's own thread measured it (this thread's
   * performance.now() milliseconds): a trace's encoder span shows the run apart from the
   * message round trip. Embedders that run on another thread report it; others need not.
   */
  onRun?: (startMs: number, endMs: number) => void;
  /**
   * Set by BatchingEmbedder on a run when another copy of the encoder would have served it or
   * what waits behind it sooner (stored texts queued deep, or a query that waited behind stored
   * texts): an encoder pool then starts one, if it may (encoder-pool.ts).
   */
  moreCopies?: boolean;
}
