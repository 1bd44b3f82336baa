/** Dot products of float vectors: the dense half of every exhaustive search is mostly these. */

import type { CorpusUnit } from './corpus-types.js';
import { kernelDots } from './wasm-dots.js';

/**
 * q·v for every unit (or the units of `slots`; each with its vector) into `out`, by the
 * WebAssembly kernel (wasm-dots.ts) for the vectors of the query's length and by `dot` for any
 * other (a unit stored by another model waits for re-embedding; the dense half is off meanwhile).
 * Both give the bits of `dot`, so a unit's score never depends on which path computed it.
 */
export function dotsInto(query: Float32Array, slots: Int32Array | null, units: readonly CorpusUnit[], out: Float64Array): void {
  const count = slots ? slots.length : units.length;
  const vectors = new Array<Float32Array>(count);
  let uniform = true;
  for (let k = 0; k < count; k++) {
    const vector = units[slots ? slots[k] : k].vector!;
    vectors[k] = vector;
    if (vector.length !== query.length) uniform = false;
  }
  // Every unit of the user, search after search: the kernel may keep them in its memory.
  if (uniform) return kernelDots(query, vectors, out, slots === null);
  for (let k = 0; k < count; k++) out[k] = dot(query, vectors[k]);
}

/**
 * Σ aᵢbᵢ over the shorter length, in float64 (a product of two float32 values is exact there), as
 * four running sums, one per index mod 4, each adding in order, then (s0 + s2) + (s1 + s3), then
 * the components past the last multiple of 4: the order of dot-kernel.wat's two-lane SIMD, so the
 * two agree bit for bit. Four independent sums also keep the core busy where one would wait on
 * its last addition.
 */
export function dot(a: Float32Array, b: Float32Array): number {
  const n = Math.min(a.length, b.length);
  const unrolled = n - (n % 4);
  let s0 = 0;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  let i = 0;
  for (; i < unrolled; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  let tail = 0;
  for (; i < n; i++) tail += a[i] * b[i];
  return s0 + s2 + (s1 + s3) + tail;
}
