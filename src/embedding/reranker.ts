/**
 * The boundary between a Search and a cross-encoder that re-scores its best hits: one logit per
 * (query, passage) pair, higher meaning more relevant. The implementation is a model the user
 * brings (cross-encoder.ts), run on a thread of its own (worker-reranker.ts).
 */
export interface Reranker {
  /** Names the model (for logs): scores are never stored, so nothing depends on it. */
  readonly modelId: string;
  /** Resolves once the model has loaded. */
  ready(): Promise<void>;
  /**
   * The logit of each (query, passage) pair, in the passages' order. The pairs of one call are
   * run together and apart from any other call's, so a pair's logit is a function of the call
   * alone, whatever else is being scored meanwhile.
   */
  score(query: string, passages: readonly string[]): Promise<Float32Array>;
  close(): Promise<void>;
}
