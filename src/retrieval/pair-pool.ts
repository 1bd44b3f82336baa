/**
 * Lists of int32 pairs in one Int32Array (the BM25 index's posting lists, and each document's
 * terms): a list is a region of its owner's choosing, new ones go at the end, a freed one is
 * waste, and when the waste is half of what is in use the pool is compacted before it would grow
 * (every live region copied, in owner order, into a new array), so the pool stays within about
 * twice its live pairs however its lists come and go. One object for the collector, and 8 bytes a
 * pair, where a JS array a list costs 8 bytes a number, its growth's slack, and ~180 bytes however
 * short it is.
 */

/**
 * The owners of a pool's regions, for its compaction: `count` rows of `stride` ints in `table`,
 * each with its region's first int at `startField` (rewritten by the compaction) and its length in
 * pairs at `pairsField`; a row of 0 pairs, or a negative start, holds no region.
 */
export interface PoolRegions {
  count: number;
  table: Int32Array;
  stride: number;
  startField: number;
  pairsField: number;
}

export class PairPool {
  /** The pool; a region's pairs sit at [start, start + 2 · pairs). Read it anew after any call that may allocate. */
  ints: Int32Array<ArrayBuffer> = new Int32Array(0);
  /** Ints in use (live and waste): a new region starts here. */
  end = 0;
  private waste = 0;

  /** Makes room for `pairs` more at the end: compacting when half of what is in use is waste, else growing the array by half (or to fit). */
  reserve(pairs: number, regions: () => PoolRegions): void {
    if (this.end + 2 * pairs <= this.ints.length) return;
    if (this.waste > 0 && this.waste * 2 >= this.end) {
      this.compact(regions());
      if (this.end + 2 * pairs <= this.ints.length) return;
    }
    this.ints = grownInts(this.ints, Math.max(this.ints.length + (this.ints.length >> 1), this.end + 2 * pairs, MIN_INTS));
  }

  /** A region of `pairs` pairs at the end; its start. */
  allocate(pairs: number, regions: () => PoolRegions): number {
    this.reserve(pairs, regions);
    const start = this.end;
    this.end += 2 * pairs;
    return start;
  }

  /** Lengthens the last region by `pairs` (reserved already). */
  extendLast(pairs: number): void {
    this.end += 2 * pairs;
  }

  /** A region of `pairs` pairs no longer used. */
  free(pairs: number): void {
    this.waste += 2 * pairs;
  }

  private compact({ count, table, stride, startField, pairsField }: PoolRegions): void {
    const live = this.end - this.waste;
    const ints = new Int32Array(this.ints.length);
    let end = 0;
    for (let row = 0; row < count; row++) {
      const at = row * stride;
      const size = 2 * table[at + pairsField];
      const start = table[at + startField];
      if (size === 0 || start < 0) continue;
      ints.set(this.ints.subarray(start, start + size), end);
      table[at + startField] = end;
      end += size;
    }
    if (end !== live) throw new Error(`pair pool compaction found ${end} live ints, expected ${live}`);
    this.ints = ints;
    this.end = end;
    this.waste = 0;
  }
}

const MIN_INTS = 64;

/** A copy of `ints` in an array of `size` (zeros after them). */
export function grownInts(ints: Int32Array, size: number): Int32Array<ArrayBuffer> {
  const grown = new Int32Array(size);
  grown.set(ints.length <= size ? ints : ints.subarray(0, size));
  return grown;
}
