import { describe, expect, it } from 'vitest';
import { blendReranked, sigmoid } from '../../src/retrieval/rerank-blend.js';

describe('blendReranked', () => {
  it('scores each re-scored hit (1 − w) · min-max(fused) + w · sigmoid(logit) and orders by it', () => {
    const fused = [0.9, 0.7, 0.5];
    const logits = [-2, 3, 0];
    const { order, scores } = blendReranked(fused, logits, 0.5);
    const expected = [0.5 * 1 + 0.5 * sigmoid(-2), 0.5 * 0.5 + 0.5 * sigmoid(3), 0.5 * 0 + 0.5 * sigmoid(0)];
    expect(order).toEqual([1, 0, 2]);
    expect(scores).toEqual([expected[1], expected[0], expected[2]]);
  });

  it('w = 0 gives the fused order back; w = 1 the cross-encoder order alone', () => {
    const fused = [5, 4, 3, 2];
    const logits = [0, 1, 2, 3];
    expect(blendReranked(fused, logits, 0).order).toEqual([0, 1, 2, 3]);
    expect(blendReranked(fused, logits, 1).order).toEqual([3, 2, 1, 0]);
  });

  it('keeps the fused order among ties', () => {
    expect(blendReranked([1, 1, 1], [0.5, 0.5, 0.5], 0.7).order).toEqual([0, 1, 2]);
  });

  it('keeps the hits past the re-scored ones below them, in their order, at or under 0', () => {
    const { order, scores } = blendReranked([10, 8, 6, 4, 2], [1, -1], 0.25);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    // min 8, spread 2 over the head: the tail's (fused − 8) / 2, scaled by 0.75.
    expect(scores.slice(2)).toEqual([0.75 * -1, 0.75 * -2, 0.75 * -3]);
    expect(Math.min(...scores.slice(0, 2))).toBeGreaterThan(0);
    // A head with no spread: the tail still falls below it, in order.
    const flat = blendReranked([3, 3, 1, 0], [0, 0], 0.5);
    expect(flat.order).toEqual([0, 1, 2, 3]);
    expect(flat.scores[2]).toBeLessThan(flat.scores[1]!);
    expect(flat.scores[3]).toBeLessThan(flat.scores[2]!);
  });

  it('refuses a weight outside [0, 1]', () => {
    expect(() => blendReranked([1], [0], 1.5)).toThrow(RangeError);
    expect(() => blendReranked([1], [0], Number.NaN)).toThrow(RangeError);
  });
});
