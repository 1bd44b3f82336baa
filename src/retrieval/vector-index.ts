import { open } from 'node:fs/promises';
import hnswlib from 'hnswlib-node';

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

  private constructor(dimensions: number, index: hnswlib.HierarchicalNSW) {
    this.dimensions = dimensions;
    this.index = index;
  }

  static create(dimensions: number, capacity = INITIAL_CAPACITY): VectorIndex {
    const index = new hnswlib.HierarchicalNSW('cosine', dimensions);
    index.initIndex({ maxElements: Math.max(capacity, 16), m: HNSW_M, efConstruction: EF_CONSTRUCTION, randomSeed: 100, allowReplaceDeleted: false });
    return new VectorIndex(dimensions, index);
  }

  /**
   * Loads a saved index. hnswlib reads an index of another dimension without complaint, so the
   * caller checks the dimension it saved beside the file before trusting it.
   */
  static async read(file: string, dimensions: number): Promise<VectorIndex> {
    const index = new hnswlib.HierarchicalNSW('cosine', dimensions);
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

  add(label: number, vector: Float32Array): void {
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

  remove(label: number): void {
    if (!this.live.has(label) || this.deleted.has(label)) return;
    this.index.markDelete(label);
    this.deleted.add(label);
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
    const result = this.index.searchKnn(Array.from(vector), wanted, filter);
    return result.neighbors.map((label, i) => ({ label, similarity: 1 - result.distances[i] }));
  }

  /** Serialises the index. hnswlib writes on a worker thread without locking: the caller must not add meanwhile. */
  async write(file: string): Promise<void> {
    await this.index.writeIndex(file);
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
