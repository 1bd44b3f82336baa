import { open } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type hnswlib from 'hnswlib-node';
import { createError } from '../errors.js';

type Hnswlib = typeof hnswlib;
let loaded: Hnswlib | undefined;

/**
 * hnswlib-node, loaded on first use rather than at import: it is a native addon built by its own
 * install script, which npm 12 runs only when the app allows it. Without the build the require
 * fails with a bindings stack trace that names no remedy; this says what to do in one line.
 * `openService` calls it at the start, so a server without the build refuses to start.
 */
export function loadHnswlib(): Hnswlib {
  if (loaded) return loaded;
  try {
    loaded = createRequire(import.meta.url)('hnswlib-node') as Hnswlib;
  } catch (cause) {
    throw createError(
      'INTERNAL',
      `hnswlib-node's native build is missing (${(cause as Error).message.split('\n')[0]}): npm 12 runs its install script only when allowed — add "allowScripts": {"hnswlib-node": true} to your app's package.json (or run \`npm install-scripts approve hnswlib-node\`), then \`npm rebuild hnswlib-node\``,
      { cause },
    );
  }
  return loaded;
}

/** Links per node; a saved graph's size and load time follow from it (the bench's scale store builds with it too). */
export const HNSW_M = 16;
/**
 * Lower than hnswlib's customary 200: insertion cost grows with it, and every Add pays it on the
 * request path. Users small enough to be scored exhaustively never read the graph; for larger
 * ones, 64 still gives the candidate lists the recall they need (the search ef is at least 64).
 */
const EF_CONSTRUCTION = 64;
const INITIAL_CAPACITY = 1024;

export interface VectorHit {
  label: number;
  similarity: number;
}

/**
 * A per-user approximate nearest-neighbour index (HNSW, cosine) over the units' own vectors,
 * labelled by each record's `seq`. It is a cache of the JSONL: the service can always rebuild it.
 */
export class VectorIndex {
  readonly dimensions: number;
  private readonly index: hnswlib.HierarchicalNSW;
  private readonly live = new Set<number>();
  private deleted = new Set<number>();
  /** Set while hnswlib serialises the graph on a worker thread, which reads it without locking. */
  private writing = false;
  /** Labels removed while the graph was being written: hnswlib marks them once the write is done. */
  private readonly unmarked = new Set<number>();

  private constructor(dimensions: number, index: hnswlib.HierarchicalNSW) {
    this.dimensions = dimensions;
    this.index = index;
  }

  static create(dimensions: number, capacity = INITIAL_CAPACITY): VectorIndex {
    const index = new (loadHnswlib().HierarchicalNSW)('cosine', dimensions);
    index.initIndex({ maxElements: Math.max(capacity, 16), m: HNSW_M, efConstruction: EF_CONSTRUCTION, randomSeed: 100, allowReplaceDeleted: false });
    return new VectorIndex(dimensions, index);
  }

  /**
   * Loads a saved index. hnswlib reads an index of another dimension without complaint, so the
   * caller checks the dimension it saved beside the file before trusting it.
   */
  static async read(file: string, dimensions: number): Promise<VectorIndex> {
    const index = new (loadHnswlib().HierarchicalNSW)('cosine', dimensions);
    await index.readIndex(file, false);
    if (index.getNumDimensions() !== dimensions) throw new Error('vector index dimension mismatch');
    const vectorIndex = new VectorIndex(dimensions, index);
    // ef is not saved with the index; labels marked deleted stay in the id list.
    for (const label of index.getIdsList()) vectorIndex.live.add(label);
    return vectorIndex;
  }

  get size(): number {
    return this.live.size - this.deleted.size;
  }

  labels(): number[] {
    return [...this.live].filter((label) => !this.deleted.has(label));
  }

  has(label: number): boolean {
    return this.live.has(label) && !this.deleted.has(label);
  }

  /**
   * Whether the graph is being written to its file: `add` must wait until it is done (the caller
   * keeps the unit aside, see UserCorpus.add), since an insert moves links and may reallocate what
   * the writer is reading.
   */
  get isWriting(): boolean {
    return this.writing;
  }

  add(label: number, vector: Float32Array): void {
    if (this.writing) throw new Error('HNSW index is being written: an insert must wait for the write to end');
    if (vector.length !== this.dimensions) throw new Error(`vector has ${vector.length} dimensions, index ${this.dimensions}`);
    if (this.live.has(label)) {
      if (this.deleted.has(label)) {
        this.index.unmarkDelete(label);
        this.deleted.delete(label);
      }
      // hnswlib replaces the stored point of an existing label.
      this.index.addPoint(Array.from(vector), label);
      return;
    }
    if (this.index.getCurrentCount() >= this.index.getMaxElements()) {
      this.index.resizeIndex(Math.max(16, this.index.getMaxElements() * 2));
    }
    this.index.addPoint(Array.from(vector), label);
    this.live.add(label);
  }

  /** Takes a label out at once for `has`, `size` and `search`; hnswlib marks it now, or after a write under way. */
  remove(label: number): void {
    if (!this.live.has(label) || this.deleted.has(label)) return;
    this.deleted.add(label);
    if (this.writing) this.unmarked.add(label);
    else this.index.markDelete(label);
  }

  /** Marks deleted labels as such for a freshly read index whose deletions predate the save. */
  markDeletedOnLoad(label: number): void {
    try {
      this.index.markDelete(label);
    } catch {
      // Already marked deleted in the saved file.
    }
    this.deleted.add(label);
  }

  /** The k nearest labels; with `filter`, the k nearest among the labels passing it (hnswlib filters during the walk). */
  search(vector: Float32Array, k: number, filter?: (label: number) => boolean): VectorHit[] {
    const count = this.size;
    if (count === 0 || k <= 0) return [];
    const wanted = Math.min(k, count);
    this.index.setEf(Math.max(wanted, 64));
    // Labels removed during a write are still live to hnswlib until it ends: left out here.
    const unmarked = this.unmarked;
    const kept = unmarked.size === 0 ? filter : (label: number) => !unmarked.has(label) && (!filter || filter(label));
    const result = this.index.searchKnn(Array.from(vector), wanted, kept);
    return result.neighbors.map((label, i) => ({ label, similarity: 1 - result.distances[i] }));
  }

  /**
   * Serialises the index. hnswlib writes on a worker thread without locking, so until it is done
   * nothing changes the graph: `add` refuses, `remove` waits (searches, which only read, go on).
   * One write at a time (the caller's graph lock orders them).
   */
  async write(file: string): Promise<void> {
    if (this.writing) throw new Error('HNSW index is already being written');
    this.writing = true;
    try {
      await this.index.writeIndex(file);
    } finally {
      this.writing = false;
      for (const label of this.unmarked) this.index.markDelete(label);
      this.unmarked.clear();
    }
    // hnswlib does not report a failed write: a full disk leaves a short file and no error.
    // Checked here, before the caller records the file's checksum and trusts it at the next start.
    if (!(await isWholeIndexFile(file))) throw new Error(`HNSW index file cut short while writing (is the disk full?): ${file}`);
  }
}

/** hnswlib's header: six size_t, an int and a uint32, five more 8-byte fields. */
const HEADER_BYTES = 96;

/**
 * Whether the file holds all hnswlib wrote: the header, `count × bytesPerElement` bytes of level 0,
 * then per element a uint32 length and that many bytes of upper-level links, and nothing after
 * (the same walk hnswlib's reader makes before it trusts the sizes).
 */
async function isWholeIndexFile(file: string): Promise<boolean> {
  const handle = await open(file, 'r');
  try {
    const { size } = await handle.stat();
    if (size < HEADER_BYTES) return false;
    const header = Buffer.alloc(HEADER_BYTES);
    await handle.read(header, 0, HEADER_BYTES, 0);
    const count = Number(header.readBigUInt64LE(16));
    const linksStart = HEADER_BYTES + count * Number(header.readBigUInt64LE(24));
    if (linksStart > size) return false;
    const links = Buffer.alloc(size - linksStart);
    let read = 0;
    while (read < links.length) {
      const { bytesRead } = await handle.read(links, read, links.length - read, linksStart + read);
      if (bytesRead === 0) return false;
      read += bytesRead;
    }
    let at = 0;
    for (let i = 0; i < count; i++) {
      if (at + 4 > links.length) return false;
      at += 4 + links.readUInt32LE(at);
    }
    return at === links.length;
  } finally {
    await handle.close();
  }
}
