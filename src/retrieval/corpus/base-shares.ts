/** The base score's two halves per candidate, for one text of the query: lexical and dense. */

import type { Bm25Index } from '../bm25-index.js';
import { contextCosine, minMaxNormalize } from '../fuse-scores.js';
import type { RetrievalWeights } from '../retrieval-config.js';
import { SPARSE_SHARE } from './candidates.js';
import type { QueryText } from './corpus-types.js';
import type { SlotLayout } from './slot-layout.js';
import type { VectorStore } from './vector-store.js';

/** A text's lexical half of the base score per candidate: (1 − denseWeight) · norm(bm25). */
export function lexicalShares(text: QueryText, candidates: Int32Array, position: (slot: number) => number, weights: RetrievalWeights, layout: SlotLayout, index: Bm25Index): Float64Array {
  let lexical: Float64Array = new Float64Array(candidates.length);
  if (weights.denseWeight < 1 && candidates.length * SPARSE_SHARE < layout.units.length) {
    // A few candidates among many units (a large user): each candidate's own terms, never the
    // posting lists (the same sums, see `scoreKeys`).
    const seqs = new Float64Array(candidates.length);
    for (let i = 0; i < candidates.length; i++) seqs[i] = layout.units[candidates[i]].seq;
    lexical = index.scoreKeys(text.terms, seqs, text.termWeights);
  } else if (weights.denseWeight < 1) {
    index.forEachScore(text.terms, (seq, termScore) => {
      const slot = layout.slotOfSeq.get(seq);
      const i = slot === undefined ? -1 : position(slot);
      if (i >= 0) lexical[i] += termScore;
    }, text.termWeights);
  }
  const lexicalNorm = minMaxNormalize(lexical);
  for (let i = 0; i < lexical.length; i++) lexical[i] = (1 - weights.denseWeight) * lexicalNorm[i];
  return lexical;
}

/** A text's dense half of the base score per candidate: denseWeight · norm(dense). */
export function denseShares(vector: Float32Array, candidates: Int32Array, position: (slot: number) => number, weights: RetrievalWeights, layout: SlotLayout, store: VectorStore): Float64Array {
  const count = candidates.length;
  const dense = new Float64Array(count);
  if (weights.denseWeight > 0) {
    // q·v per slot, computed once: a unit's own and as its next unit's previous. Scored
    // exhaustively, every slot is a candidate: all of them in one call of the kernel. Every
    // unit has its vector here: the dense half is off while any waits for one (usableWeights).
    let dotOf: (slot: number) => number;
    if (count * SPARSE_SHARE < layout.units.length) {
      // A few candidates among many units: their dots by position, and those of previous units
      // outside them by slot; never an array of every unit's.
      const own = new Float64Array(count);
      store.queryDots(vector, candidates, layout, own);
      const outside = new Map<number, number>();
      for (let i = 0; i < count; i++) {
        const previous = layout.previous[candidates[i]];
        if (previous >= 0 && position(previous) < 0) outside.set(previous, 0);
      }
      const outsideSlots = Int32Array.from(outside.keys());
      const outsideDots = new Float64Array(outsideSlots.length);
      store.queryDots(vector, outsideSlots, layout, outsideDots);
      outsideSlots.forEach((slot, k) => outside.set(slot, outsideDots[k]));
      dotOf = (slot) => {
        const at = position(slot);
        return at >= 0 ? own[at] : outside.get(slot)!;
      };
    } else {
      const queryDot = new Float64Array(layout.units.length);
      if (count === layout.units.length) store.queryDots(vector, null, layout, queryDot);
      else {
        // The candidates' dots and their previous units', all in one call of the kernel (one by
        // one they cost three times as much): NaN marks a slot not wanted yet.
        queryDot.fill(Number.NaN);
        const wanted = new Int32Array(2 * count);
        let size = 0;
        const want = (slot: number): void => {
          if (!Number.isNaN(queryDot[slot])) return;
          queryDot[slot] = 0;
          wanted[size++] = slot;
        };
        for (let i = 0; i < count; i++) {
          want(candidates[i]);
          if (layout.previous[candidates[i]] >= 0) want(layout.previous[candidates[i]]);
        }
        const dots = new Float64Array(size);
        store.queryDots(vector, wanted.subarray(0, size), layout, dots);
        for (let k = 0; k < size; k++) queryDot[wanted[k]] = dots[k];
      }
      dotOf = (slot) => queryDot[slot];
    }
    for (let i = 0; i < count; i++) {
      const slot = candidates[i];
      const previous = layout.previous[slot];
      const selfDotPrevious = layout.selfDotPrevious[slot];
      dense[i] = contextCosine(
        dotOf(slot),
        previous >= 0 ? dotOf(previous) : undefined,
        Number.isNaN(selfDotPrevious) ? undefined : selfDotPrevious,
        weights.contextWeight,
      );
    }
  }
  const denseNorm = minMaxNormalize(dense);
  for (let i = 0; i < count; i++) dense[i] = weights.denseWeight * denseNorm[i];
  return dense;
}
