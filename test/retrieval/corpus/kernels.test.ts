import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CorpusUnit } from '../../../src/retrieval/corpus/corpus-types.js';
import { dot, dotsInto } from '../../../src/retrieval/corpus/kernels.js';

/** The order `dot` documents, spelled out: four in-order sums by index mod 4, (s0 + s2) + (s1 + s3), then the tail. */
function documentedDot(a: Float32Array, b: Float32Array): number {
  const n = Math.min(a.length, b.length);
  const sums = [0, 0, 0, 0];
  const whole = n - (n % 4);
  for (let i = 0; i < whole; i++) sums[i % 4] += a[i] * b[i];
  let tail = 0;
  for (let i = whole; i < n; i++) tail += a[i] * b[i];
  return sums[0] + sums[2] + (sums[1] + sums[3]) + tail;
}

function plainDot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) sum += a[i] * b[i];
  return sum;
}

const asUnits = (vectors: Float32Array[]) => vectors.map((vector, seq) => ({ seq, vector }) as unknown as CorpusUnit);
const float = fc.float({ min: -4, max: 4, noNaN: true, noDefaultInfinity: true });
const vectorOf = (n: number) => fc.array(float, { minLength: n, maxLength: n }).map((values) => Float32Array.from(values));

describe('dot kernels', () => {
  it('dot adds in its documented order, within rounding of a plain sum', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 70 }).chain((n) => fc.tuple(vectorOf(n), vectorOf(n))),
        ([a, b]) => {
          expect(Object.is(dot(a, b), documentedDot(a, b))).toBe(true);
          const scale = a.reduce((sum, x, i) => sum + Math.abs(x * b[i]), 0);
          expect(Math.abs(dot(a, b) - plainDot(a, b))).toBeLessThanOrEqual(1e-12 * scale + 1e-300);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('dotsInto gives every unit the bits of dot, through the WebAssembly kernel, any dimension, count or subset of slots', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }).chain((n) =>
          fc.record({
            query: vectorOf(n),
            vectors: fc.array(vectorOf(n), { maxLength: 300 }),
            pick: fc.option(fc.array(fc.nat(), { maxLength: 300 })),
          }),
        ),
        ({ query, vectors, pick }) => {
          const slots = pick && vectors.length > 0 ? Int32Array.from(pick, (p) => p % vectors.length) : null;
          const count = slots ? slots.length : vectors.length;
          const out = new Float64Array(count).fill(Number.NaN);
          dotsInto(query, slots, asUnits(vectors), out);
          for (let k = 0; k < count; k++) expect(Object.is(out[k], dot(query, vectors[slots ? slots[k] : k]))).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('runs past a chunk of vectors and grows its memory for wide ones, then serves narrow ones again', () => {
    const random = (seed: number) => () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) - 0.5;
    for (const [n, count] of [[512, 1000], [4096, 300], [384, 129], [513, 7]] as const) {
      const next = random(n + count);
      const query = Float32Array.from({ length: n }, next);
      const vectors = Array.from({ length: count }, () => Float32Array.from({ length: n }, next));
      const out = new Float64Array(count);
      dotsInto(query, null, asUnits(vectors), out);
      vectors.forEach((vector, k) => expect(out[k]).toBe(dot(query, vector)));
    }
  });

  it('a unit of another length (one waiting for re-embedding) gets dot over the shorter length, the rest unchanged', () => {
    const query = Float32Array.from({ length: 8 }, (_, i) => i + 1);
    const vectors = [Float32Array.from({ length: 8 }, () => 1), Float32Array.from({ length: 4 }, () => 2), Float32Array.from({ length: 8 }, (_, i) => -i)];
    const out = new Float64Array(3);
    dotsInto(query, null, asUnits(vectors), out);
    expect([...out]).toEqual([36, 20, -(0 * 1 + 1 * 2 + 2 * 3 + 3 * 4 + 4 * 5 + 5 * 6 + 6 * 7 + 7 * 8)]);
  });

  describe("a user's whole list kept in the kernel's memory between calls", () => {
    const random = (seed: number) => () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) - 0.5;
    const vectorsOf = (next: () => number, n: number, count: number) => Array.from({ length: count }, () => Float32Array.from({ length: n }, next));
    const expectDots = (query: Float32Array, vectors: Float32Array[]) => {
      const out = new Float64Array(vectors.length).fill(Number.NaN);
      dotsInto(query, null, asUnits(vectors), out);
      const wrong = vectors.filter((vector, k) => !Object.is(out[k], dot(query, vector))).length;
      expect(wrong).toBe(0);
    };

    it('answers from the kept copy only while every vector is the same one: a replaced, added, removed or reordered vector is seen', () => {
      const next = random(7);
      const query = Float32Array.from({ length: 64 }, next);
      const vectors = vectorsOf(next, 64, 400);
      expectDots(query, vectors);
      expectDots(query, [...vectors]);
      // Another vector in the middle (a re-embedded unit) and the same first one: the kept rows must not answer for it.
      const replaced = [...vectors];
      replaced[200] = Float32Array.from({ length: 64 }, next);
      expectDots(query, replaced);
      expectDots(query, [...replaced, ...vectorsOf(next, 64, 3)]);
      expectDots(query, replaced.slice(0, 300));
      expectDots(query, [...replaced].reverse());
      expectDots(query, vectors);
    });

    it('keeps several lists, empties itself when full, and starts again for another dimension', () => {
      const next = random(11);
      for (const n of [512, 384, 512]) {
        const query = Float32Array.from({ length: n }, next);
        // 12 lists of 1,000 vectors of 512: ~24 MB, more than the arena holds; each asked twice, in turns.
        const lists = Array.from({ length: 12 }, () => vectorsOf(next, n, 1_000));
        for (let round = 0; round < 2; round++) for (const list of lists) expectDots(query, list);
      }
      // Larger than the arena alone: scored a chunk at a time.
      const query = Float32Array.from({ length: 4096 }, next);
      expectDots(query, vectorsOf(next, 4096, 1_100));
    });
  });
});
