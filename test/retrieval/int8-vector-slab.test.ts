import { describe, expect, it } from 'vitest';
import { Int8VectorSlab, quantizeInto } from '../../src/retrieval/int8-vector-slab.js';

/** A deterministic pseudo-random unit vector (the encoder's are unit length too). */
function unitVector(seed: number, dimensions = 512): Float32Array {
  const raw = Array.from({ length: dimensions }, (_, i) => Math.sin((seed + 1) * 12.9898 + (i + 1) * 78.233) * 43758.5453 % 1);
  const norm = Math.hypot(...raw);
  return Float32Array.from(raw, (x) => x / norm);
}

function plainDot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += a[i] * b[i];
  return sum;
}

describe('quantizeInto', () => {
  it('maps the largest component to ±127 and every other within half a step of its value', () => {
    const vector = Float32Array.from([0.5, -0.25, 0.1, 0, -0.5]);
    const codes = new Int8Array(5);
    const scale = quantizeInto(vector, codes, 0);
    expect(scale).toBe(Math.fround(0.5 / 127));
    expect(codes[0]).toBe(127);
    expect(codes[4]).toBe(-127);
    expect(codes[3]).toBe(0);
    for (let i = 0; i < vector.length; i++) expect(Math.abs(codes[i] * scale - vector[i])).toBeLessThanOrEqual(scale / 2 + 1e-9);
  });

  it('gives a zero vector (or one with an infinite component) zero codes and a zero scale', () => {
    const codes = new Int8Array(6).fill(9);
    expect(quantizeInto(new Float32Array(3), codes, 0)).toBe(0);
    expect(quantizeInto(Float32Array.from([1, Infinity, 2]), codes, 3)).toBe(0);
    expect([...codes]).toEqual([0, 0, 0, 0, 0, 0]);
  });
});

describe('Int8VectorSlab', () => {
  it('scores a float query against the codes within 2·10⁻³ of the float dot product, for unit vectors', () => {
    const slab = new Int8VectorSlab(512, 4);
    const vectors = Array.from({ length: 200 }, (_, seed) => unitVector(seed));
    const rows = vectors.map((vector) => slab.put(vector));
    const query = unitVector(1000);
    let worst = 0;
    for (let k = 0; k < rows.length; k++) worst = Math.max(worst, Math.abs(slab.dot(query, rows[k]) - plainDot(query, vectors[k])));
    expect(worst).toBeLessThan(2e-3);
    expect(Math.abs(slab.dotRows(rows[0], rows[1]) - plainDot(vectors[0], vectors[1]))).toBeLessThan(2e-3);
  });

  it('gives the same bits one row at a time and for a list of rows, in any order', () => {
    const slab = new Int8VectorSlab(513);
    const rows = Int32Array.from({ length: 7 }, (_, seed) => slab.put(unitVector(seed, 513)));
    const query = unitVector(77, 513);
    const out = new Float64Array(rows.length);
    slab.dotsInto(query, rows.reverse(), out);
    rows.forEach((row, k) => expect(out[k]).toBe(slab.dot(query, row)));
  });

  it('gives back a vector the codes make, close to the one put', () => {
    const slab = new Int8VectorSlab(512);
    const vector = unitVector(5);
    const back = slab.vector(slab.put(vector));
    const step = Math.max(...vector.map(Math.abs)) / 127;
    for (let i = 0; i < vector.length; i++) expect(Math.abs(back[i] - vector[i])).toBeLessThanOrEqual(step / 2 + 1e-7);
    // Put again, the codes' own vector is held unchanged: an update that keeps its vector loses nothing more.
    expect([...slab.vector(slab.put(back))]).toEqual([...back]);
  });

  it('reuses released rows and keeps every row through growth', () => {
    const slab = new Int8VectorSlab(16, 1);
    const vectors = Array.from({ length: 10 }, (_, seed) => unitVector(seed, 16));
    const rows = vectors.map((vector) => slab.put(vector));
    expect(new Set(rows).size).toBe(10);
    const before = rows.map((row) => slab.vector(row));
    slab.release(rows[3]);
    expect(slab.size).toBe(9);
    const replacement = unitVector(99, 16);
    expect(slab.put(replacement)).toBe(rows[3]);
    expect(Math.abs(slab.dot(replacement, rows[3]) - 1)).toBeLessThan(1e-2);
    rows.forEach((row, k) => {
      if (k !== 3) expect([...slab.vector(row)]).toEqual([...before[k]]);
    });
  });

  it('refuses a vector of another dimension', () => {
    expect(() => new Int8VectorSlab(8).put(new Float32Array(7))).toThrow(/dimensions/);
  });
});
