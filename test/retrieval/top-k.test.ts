import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { TopK } from '../../src/retrieval/top-k.js';

describe('TopK', () => {
  it('keeps the k best offers, best first, ties to the larger key', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ key: fc.integer({ min: 0, max: 1000 }), score: fc.integer({ min: 0, max: 20 }) })), fc.integer({ min: 0, max: 30 }), (offers, k) => {
        const top = new TopK(k);
        for (const { key, score } of offers) top.offer(key, score);
        const expected = [...offers].sort((a, b) => b.score - a.score || b.key - a.key).slice(0, k);
        expect(top.sorted()).toEqual(expected);
      }),
    );
  });
});
