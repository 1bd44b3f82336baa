import { createError } from '../errors.js';

/**
 * Runs token-id rows through `run` in passes of at most `batchSize` rows and `batchTokens` padded
 * tokens, returning one vector per row in input order. Rows are sorted by length (all of them, not
 * only within a pass) and cut into the passes `planPasses` finds cheapest. Every encoder here
 * gives a row the same vector in any pass (issue 31), so how the rows are cut is free to follow
 * cost alone.
 */
export async function encodeInPasses(
  ids: readonly number[][],
  limits: { batchSize: number; batchTokens: number; closed: () => boolean },
  run: (batch: number[][]) => Promise<Float32Array[]>,
): Promise<Float32Array[]> {
  const order = ids.map((_, i) => i).sort((a, b) => ids[a]!.length - ids[b]!.length);
  const out = new Array<Float32Array>(ids.length);
  const ends = planPasses(order.map((i) => ids[i]!.length), limits);
  for (let p = 0, start = 0; p < ends.length; start = ends[p]!, p++) {
    if (p > 0) await new Promise<void>((resolve) => setImmediate(resolve)); // let the thread breathe
    if (limits.closed()) throw createError('EMBEDDER_UNAVAILABLE', 'The embedder was closed');
    const batch = order.slice(start, ends[p]);
    const vectors = await run(batch.map((i) => ids[i]!));
    batch.forEach((textIndex, row) => {
      out[textIndex] = vectors[row]!;
    });
  }
  return out;
}

/**
 * What a pass costs beyond its padded tokens, in padded tokens: the int8 encoder on one thread
 * runs a token in ~85 µs in a large pass and spends ~170 µs more on any pass (its weights read
 * once more, every kernel started once more), about two tokens; a little more covers the small
 * passes' lower efficiency (98 µs a token alone). Measured with scratch runs of 1-64 rows of 1-24
 * tokens (bench/HISTORY.md).
 */
const PASS_COST_TOKENS = 3;

/**
 * Where to cut rows sorted by length (ascending) into passes: each pass's end, exclusive. A pass
 * costs PASS_COST_TOKENS plus its rows times its longest (the padding a shorter row carries is
 * computed too); the cuts minimise the total within the limits (a row alone always fits), by
 * dynamic programming over the cut points. Twenty sentences of 8-15 tokens, one pass padded to 15
 * before, become about four passes of near-equal length: 11% fewer padded tokens in all.
 */
export function planPasses(lengths: readonly number[], limits: { batchSize: number; batchTokens: number }): number[] {
  const n = lengths.length;
  const best = new Float64Array(n + 1).fill(Infinity);
  const from = new Int32Array(n + 1);
  best[0] = 0;
  for (let end = 1; end <= n; end++) {
    const longest = Math.max(1, lengths[end - 1]!);
    for (let start = end - 1; start >= 0; start--) {
      const rows = end - start;
      if (rows > 1 && (rows > limits.batchSize || rows * longest > limits.batchTokens)) break;
      const cost = best[start]! + PASS_COST_TOKENS + rows * longest;
      if (cost < best[end]!) {
        best[end] = cost;
        from[end] = start;
      }
    }
  }
  const ends: number[] = [];
  for (let end = n; end > 0; end = from[end]!) ends.push(end);
  return ends.reverse();
}
