import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeInPasses, planPasses } from '../../src/embedding/encode-passes.js';

/** What planPasses minimises, for a plan given by its ends: PASS_COST_TOKENS (3) per pass plus rows × longest. */
function cost(lengths: readonly number[], ends: readonly number[]): number {
  let total = 0;
  for (let p = 0, start = 0; p < ends.length; start = ends[p]!, p++) total += 3 + (ends[p]! - start) * Math.max(1, lengths[ends[p]! - 1]!);
  return total;
}

/** Every way to cut the rows (small n), keeping those within the limits: the cheapest cost. */
function cheapest(lengths: readonly number[], limits: { batchSize: number; batchTokens: number }): number {
  const n = lengths.length;
  let best = Infinity;
  for (let mask = 0; mask < 2 ** Math.max(0, n - 1); mask++) {
    const ends: number[] = [];
    for (let i = 1; i < n; i++) if (mask & (1 << (i - 1))) ends.push(i);
    ends.push(n);
    const fits = ends.every((end, p) => {
      const rows = end - (p === 0 ? 0 : ends[p - 1]!);
      return rows === 1 || (rows <= limits.batchSize && rows * Math.max(1, lengths[end - 1]!) <= limits.batchTokens);
    });
    if (fits) best = Math.min(best, cost(lengths, ends));
  }
  return n === 0 ? 0 : best;
}

const sortedLengths = (maxLength: number) => fc.array(fc.integer({ min: 0, max: 40 }), { maxLength }).map((lengths) => lengths.sort((a, b) => a - b));
const limitsArb = fc.record({ batchSize: fc.integer({ min: 1, max: 12 }), batchTokens: fc.integer({ min: 1, max: 200 }) });

describe('planPasses', () => {
  it('cuts every row into one pass, in order, within the limits (a row alone always fits), at the cheapest cost there is', () => {
    fc.assert(
      fc.property(sortedLengths(11), limitsArb, (lengths, limits) => {
        const ends = planPasses(lengths, limits);
        expect(ends.at(-1) ?? 0).toBe(lengths.length);
        ends.forEach((end, p) => {
          const rows = end - (p === 0 ? 0 : ends[p - 1]!);
          expect(rows).toBeGreaterThan(0);
          if (rows > 1) {
            expect(rows).toBeLessThanOrEqual(limits.batchSize);
            expect(rows * Math.max(1, lengths[end - 1]!)).toBeLessThanOrEqual(limits.batchTokens);
          }
        });
        expect(cost(lengths, ends)).toBe(cheapest(lengths, limits));
      }),
      { numRuns: 300 },
    );
  });

  it('gives texts of one length one pass, and splits sentences of mixed lengths where the padding would cost more than a pass', () => {
    expect(planPasses(Array(20).fill(12), { batchSize: 64, batchTokens: 2048 })).toEqual([20]);
    const mixed = [8, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 12, 13, 13, 14, 14, 15, 15, 15, 15];
    const ends = planPasses(mixed, { batchSize: 64, batchTokens: 2048 });
    expect(ends.length).toBeGreaterThan(1);
    expect(cost(mixed, ends)).toBeLessThan(cost(mixed, [mixed.length]));
  });
});

describe('encodeInPasses', () => {
  it('answers in input order whatever the passes, each row through exactly one pass', async () => {
    const ids = [[1, 2, 3], [4], [5, 6, 7, 8, 9, 10], [11, 12], [13]];
    const seen: number[][] = [];
    const vectors = await encodeInPasses(ids, { batchSize: 64, batchTokens: 2048, closed: () => false }, async (batch) => {
      seen.push(...batch);
      return batch.map((row) => Float32Array.of(row[0]!, row.length));
    });
    expect(vectors.map((v) => [...v])).toEqual(ids.map((row) => [row[0], row.length]));
    expect(seen.map((row) => row[0]).sort((a, b) => a! - b!)).toEqual([1, 4, 5, 11, 13]);
  });
});
