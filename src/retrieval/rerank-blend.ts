import { minMaxNormalize } from './fuse-scores.js';

/**
 * A reranker's say in an answer, a pure function of plain numbers. The best N hits of the fused
 * ranking (N = the logits given) are scored again by a cross-encoder and re-ordered by
 *
 *   final(h) = (1 − w) · norm(fused(h)) + w · sigmoid(logit(h))
 *
 * where norm is min-max over those N fused scores (`minMaxNormalize`), so both halves lie in
 * [0, 1] whatever the fusion's scale or the model's logit range; ties keep the fused order. The
 * hits past N keep their fused order below them, scored (1 − w) · (fused − min) / spread with the
 * same min and spread: at most 0, so never above a re-scored hit, and still telling each other
 * apart. w = 0 gives the fused order back, w = 1 the cross-encoder's alone.
 */

export function sigmoid(x: number): number {
  return 1 / (1 + Math.exp(-x));
}

export interface Reranked {
  /** Indices into the hits, best first: all of them, the re-scored ones first. */
  order: number[];
  /** Each position's final score, in `order`'s order: its fused share plus its reranker share. */
  scores: number[];
  /** Each position's (1 − w) · norm(fused), in `order`'s order. */
  fusedShares: number[];
  /** Each position's w · sigmoid(logit) (0 past the re-scored hits), in `order`'s order. */
  rerankerShares: number[];
}

/** `fused`: the hits' fused scores, best first; `logits`: the cross-encoder's for the first `logits.length` of them. */
export function blendReranked(fused: readonly number[], logits: ArrayLike<number>, weight: number): Reranked {
  if (!(weight >= 0 && weight <= 1)) throw new RangeError(`the rerank weight must be between 0 and 1, got ${weight}`);
  const top = Math.min(logits.length, fused.length);
  const head = fused.slice(0, top);
  const norm = minMaxNormalize(head);
  const min = Math.min(...head);
  const spread = Math.max(...head) - min;
  const fusedShare = head.map((_, i) => (1 - weight) * norm[i]!);
  const rerankerShare = head.map((_, i) => weight * sigmoid(logits[i]!));
  const final = head.map((_, i) => fusedShare[i]! + rerankerShare[i]!);
  const order = head.map((_, i) => i).sort((a, b) => final[b]! - final[a]! || a - b);
  const out: Reranked = { order, scores: order.map((i) => final[i]!), fusedShares: order.map((i) => fusedShare[i]!), rerankerShares: order.map((i) => rerankerShare[i]!) };
  for (let i = top; i < fused.length; i++) {
    const share = (1 - weight) * (spread > 0 ? (fused[i]! - min) / spread : fused[i]! - min);
    out.order.push(i);
    out.scores.push(share);
    out.fusedShares.push(share);
    out.rerankerShares.push(0);
  }
  return out;
}
