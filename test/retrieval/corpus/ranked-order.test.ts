import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rankedPrefix } from '../../../src/retrieval/corpus/ranked-order.js';

/** The order as one full sort gives it: best score first, ties to the larger seq. */
function fullOrder(score: Float64Array, seqs: Float64Array): number[] {
  return Array.from(score.keys()).sort((a, b) => score[b]! - score[a]! || seqs[b]! - seqs[a]!);
}

describe('rankedPrefix', () => {
  it('is the first `want` of the full order, for any scores (ties included) and any want', () => {
    fc.assert(
      fc.property(
        // Few distinct scores, so that ties are common; seqs unique, in any order.
        fc.array(fc.integer({ min: 0, max: 6 }), { minLength: 0, maxLength: 300 }),
        fc.nat(),
        fc.nat(),
        (values, wantSeed, seqSeed) => {
          const count = values.length;
          const score = Float64Array.from(values, (v) => v / 3);
          const seqs = Float64Array.from(values.keys(), (i) => ((i * 7919 + seqSeed) % 100_003) + i * 100_003);
          const want = count === 0 ? 0 : wantSeed % (count + 2);
          expect(Array.from(rankedPrefix(score, seqs, count, want))).toEqual(fullOrder(score, seqs).slice(0, want));
        },
      ),
      { numRuns: 300, seed: 29 },
    );
  });

  it('handles sorted and reversed inputs and a want of everything', () => {
    const count = 2000;
    const ascending = Float64Array.from({ length: count }, (_, i) => i);
    const seqs = Float64Array.from({ length: count }, (_, i) => i);
    expect(Array.from(rankedPrefix(ascending, seqs, count, 10))).toEqual(fullOrder(ascending, seqs).slice(0, 10));
    const descending = Float64Array.from({ length: count }, (_, i) => count - i);
    expect(Array.from(rankedPrefix(descending, seqs, count, 10))).toEqual(fullOrder(descending, seqs).slice(0, 10));
    expect(Array.from(rankedPrefix(descending, seqs, count, count))).toEqual(fullOrder(descending, seqs));
  });
});
