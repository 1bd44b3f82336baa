/**
 * The candidates' order for an answer: best score first, ties to the newer (larger seq). A strict
 * total order (seqs are unique), so any way of computing it gives the same sequence.
 *
 * Why not one sort of every candidate: an answer reads only its first `limit` survivors (after
 * one per message and per text), and a user's candidates run to thousands. `rankedPrefix` puts
 * the best `want` first in O(n) (quickselect) and sorts only those; the caller asks for the whole
 * order (`want` = count) when the prefix did not hold enough survivors.
 */
export function rankedPrefix(score: Float64Array, seqs: Float64Array, count: number, want: number): Uint32Array {
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  const before = (a: number, b: number): boolean => score[a] > score[b] || (score[a] === score[b] && seqs[a] > seqs[b]);
  const take = Math.min(want, count);
  if (take < count) select(order, take, before);
  const prefix = order.subarray(0, take);
  prefix.sort((a, b) => (before(a, b) ? -1 : before(b, a) ? 1 : 0));
  return prefix;
}

/** Rearranges `order` so that its first `k` entries are the k first in `before`'s order (in any order among themselves). */
function select(order: Uint32Array, k: number, before: (a: number, b: number) => boolean): void {
  let lo = 0;
  let hi = order.length - 1;
  while (lo < hi) {
    // Median of three as the pivot keeps sorted and reversed inputs linear.
    const mid = (lo + hi) >>> 1;
    if (before(order[mid], order[lo])) swap(order, mid, lo);
    if (before(order[hi], order[lo])) swap(order, hi, lo);
    if (before(order[hi], order[mid])) swap(order, hi, mid);
    const pivot = order[mid];
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (before(order[i], pivot)) i++;
      while (before(pivot, order[j])) j--;
      if (i <= j) {
        swap(order, i, j);
        i++;
        j--;
      }
    }
    // [lo, j] all come before or equal the pivot, [i, hi] after or equal it.
    if (k - 1 <= j) hi = j;
    else if (k - 1 >= i) lo = i;
    else return;
  }
}

function swap(order: Uint32Array, a: number, b: number): void {
  const t = order[a];
  order[a] = order[b];
  order[b] = t;
}
