import { DOT_KERNEL_BASE64 } from './dot-kernel-bytes.js';

/**
 * The dot-product kernel of dot-kernel.wat, run on vectors copied into its memory a chunk at a
 * time: two float64 lanes at once, about 3x the plain loop's speed with the copy (0.22 ms against
 * 0.62 for 1,000 vectors of 512), so that scoring a user exhaustively is no longer mostly dots.
 * The vectors stay where they are (each unit's own Float32Array): a chunk's worth is copied at
 * a time, or a user's whole list is kept in the kernel's memory between calls (RESIDENT_BYTES at most).
 */

/** Vectors per kernel call: 256 KiB of scratch at 512 dimensions, which stays in the core's cache. */
const CHUNK_ROWS = 128;
const PAGE_BYTES = 65_536;

interface Kernel {
  memory: WebAssembly.Memory;
  dots: (query: number, vectors: number, rows: number, n: number, out: number) => void;
}

let kernel: Kernel | null = null;

function instantiate(): Kernel {
  const module = new WebAssembly.Module(Buffer.from(DOT_KERNEL_BASE64, 'base64'));
  const exports = new WebAssembly.Instance(module).exports as unknown as { memory: WebAssembly.Memory; dots: Kernel['dots'] };
  return { memory: exports.memory, dots: exports.dots };
}

/** The kernel, its memory at least `bytes` long. */
function kernelWith(bytes: number): Kernel {
  kernel ??= instantiate();
  const missing = bytes - kernel.memory.buffer.byteLength;
  if (missing > 0) kernel.memory.grow(Math.ceil(missing / PAGE_BYTES));
  return kernel;
}

/**
 * Lists of vectors kept in the kernel's memory from one call to the next. A user scored
 * exhaustively hands over the same list (the same Float32Array objects in the same order) search
 * after search until it changes, and copying it in cost more than the dots themselves: a profile of
 * cached Searches of a ~690-memory LoCoMo user gave ~0.26 ms of copying and ~0.16 ms of dots a
 * Search. A list is kept when the caller allows it (every unit of a user, not a filtered subset),
 * it holds at least RESIDENT_MIN_ROWS vectors (a small one's copy is cheap, and users of a few
 * dozen memories come by the thousand) and fits in RESIDENT_BYTES; when the arena is full it is
 * emptied and filled again. Only references are compared: a vector is never written once made (a
 * unit's new vector is a new array), so the same objects in the same order hold the same numbers.
 * A list that grew at its end (an Add) copies only its new vectors when it was the last one placed.
 */
const RESIDENT_MIN_ROWS = 256;
const RESIDENT_BYTES = 16 * 1024 * 1024;

interface ResidentList {
  vectors: readonly Float32Array[];
  /** Bytes from the arena's start. */
  at: number;
}

/** The arena: lists by their first vector, for vectors of `dimensions`; `used` bytes placed. */
const arena = { dimensions: 0, used: 0, lists: new Map<Float32Array, ResidentList>() };

function emptyArena(dimensions: number): void {
  arena.dimensions = dimensions;
  arena.used = 0;
  arena.lists.clear();
}

/** Where `vectors` lie in the kernel's memory (the arena starting at `arenaAt`), copying in what is not there yet. */
function residentRows(vectors: readonly Float32Array[], n: number, arenaAt: number): number {
  const rowBytes = n * 4;
  const bytes = vectors.length * rowBytes;
  if (arena.dimensions !== n) emptyArena(n);
  const first = vectors[0];
  let list = arena.lists.get(first);
  let placed = 0;
  if (list !== undefined) {
    const held = list.vectors;
    const common = Math.min(held.length, vectors.length);
    while (placed < common && held[placed] === vectors[placed]) placed++;
    if (placed === vectors.length && held.length === vectors.length) return arenaAt + list.at;
    const last = list.at + held.length * rowBytes === arena.used;
    if (!last || list.at + bytes > RESIDENT_BYTES) {
      arena.lists.delete(first);
      list = undefined;
      placed = 0;
    }
  }
  if (list === undefined) {
    if (arena.used + bytes > RESIDENT_BYTES) emptyArena(n);
    list = { vectors, at: arena.used };
    arena.lists.set(first, list);
  }
  list.vectors = vectors;
  arena.used = list.at + bytes;
  const { memory } = kernelWith(arenaAt + arena.used);
  const rows = new Float32Array(memory.buffer, arenaAt + list.at, vectors.length * n);
  for (let r = placed; r < vectors.length; r++) rows.set(vectors[r], r * n);
  return arenaAt + list.at;
}

/**
 * out[k] = q·vector(k) for k < count, every vector of q's length, with the bits of `dot` in
 * kernels.ts (the same additions in the same order). `keep`: the list may stay in the kernel's
 * memory for the next call (see RESIDENT_MIN_ROWS).
 */
export function kernelDots(query: Float32Array, vectors: readonly Float32Array[], out: Float64Array, keep = false): void {
  const count = vectors.length;
  const n = query.length;
  if (count === 0 || n === 0) {
    out.fill(0, 0, count);
    return;
  }
  // Layout: the query as float64, then a chunk's results, then its vectors (all 8-byte aligned),
  // then the arena of kept lists.
  const queryAt = 0;
  const outAt = n * 8;
  const vectorsAt = outAt + CHUNK_ROWS * 8;
  const arenaAt = vectorsAt + CHUNK_ROWS * n * 4;
  kernelWith(arenaAt);
  const kept = keep && count >= RESIDENT_MIN_ROWS && count * n * 4 <= RESIDENT_BYTES ? residentRows(vectors, n, arenaAt) : -1;
  // Views after any growth: growing the memory detaches the views of its old buffer.
  const { memory, dots } = kernel!;
  const buffer = memory.buffer;
  const query64 = new Float64Array(buffer, queryAt, n);
  for (let i = 0; i < n; i++) query64[i] = query[i];
  const results = new Float64Array(buffer, outAt, CHUNK_ROWS);
  const rows = kept < 0 ? new Float32Array(buffer, vectorsAt, CHUNK_ROWS * n) : null;
  for (let start = 0; start < count; start += CHUNK_ROWS) {
    const size = Math.min(CHUNK_ROWS, count - start);
    if (rows === null) {
      dots(queryAt, kept + start * n * 4, size, n, outAt);
    } else {
      for (let r = 0; r < size; r++) rows.set(vectors[start + r], r * n);
      dots(queryAt, vectorsAt, size, n, outAt);
    }
    for (let r = 0; r < size; r++) out[start + r] = results[r];
  }
}
