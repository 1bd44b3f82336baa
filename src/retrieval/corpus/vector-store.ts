import { Int8VectorSlab } from '../int8-vector-slab.js';
import type { CorpusUnit } from './corpus-types.js';
import { dot, dotsInto } from './kernels.js';
import type { UnitLinks } from './sessions.js';
import type { SlotLayout } from './slot-layout.js';

/**
 * The units' vectors as search scores them: each unit's own Float32Array (users scored
 * exhaustively, bit for bit as before), or, once the user keeps an HNSW graph, int8 codes in one
 * slab (see `compact`). A unit's row lives in its links.
 */
export class VectorStore {
  private slab: Int8VectorSlab | null = null;
  /** Units without a vector of the current model (re-embedding in the background). */
  readonly unembedded = new Set<number>();

  constructor(private readonly links: ReadonlyMap<number, UnitLinks>) {}

  /** Whether the vectors are held as int8 codes. */
  get isCompact(): boolean {
    return this.slab !== null;
  }

  /**
   * Moves every unit's vector into an int8 slab: a quarter of the bytes, and no typed-array
   * objects per unit. Dense scores come from the codes from then on, for every unit alike (a
   * ranking must not depend on which units the graph holds yet); a unit keeps its float vector
   * only while the graph waits for it, so the graph is built from exact vectors. Only users that
   * keep a graph take this: they are the memory's bulk, their graph keeps a float copy of its
   * own, and the dev sets' recall with every user on that path held (bench/HISTORY.md).
   * False when the vectors were compact already.
   */
  compact(dimensions: number, waitsForGraph: (seq: number) => boolean): boolean {
    if (this.slab) return false;
    this.slab = new Int8VectorSlab(dimensions, this.links.size);
    for (const link of this.links.values()) this.take(link, waitsForGraph(link.unit.seq));
    // The context blend's dots, from the codes as every later one is.
    for (const link of this.links.values()) link.selfDotPrevious = link.previous ? this.dotOfUnits(link.unit, link.previous) : undefined;
    return true;
  }

  /**
   * Held compactly: gives the unit its row (from its float vector) if it has none, and drops the
   * float unless the graph still waits for it. Holding floats: nothing.
   */
  take(link: UnitLinks, waitsForGraph: boolean): void {
    if (!this.slab) return;
    const { unit } = link;
    if (unit.vector === null) return;
    if (link.row < 0) link.row = this.slab.put(unit.vector);
    if (!waitsForGraph) unit.vector = null;
  }

  /** Frees a removed unit's row. */
  release(link: UnitLinks): void {
    if (this.slab && link.row >= 0) this.slab.release(link.row);
  }

  /**
   * The unit's vector as search scores it: held compactly, the codes' vector (a fresh array, the
   * same whether or not the graph has taken the float yet); the exact one is the store's.
   */
  vectorOf(link: UnitLinks): Float32Array | undefined {
    if (this.slab) return link.row >= 0 ? this.slab.vector(link.row) : undefined;
    return link.unit.vector ?? undefined;
  }

  /** The vector to give the graph: the exact float while the unit holds it, else the codes'. */
  graphVector(link: UnitLinks): Float32Array | null {
    return link.unit.vector ?? (this.slab && link.row >= 0 ? this.slab.vector(link.row) : null);
  }

  /** v·p of two units' vectors; undefined while either waits for its vector. */
  dotOfUnits(a: CorpusUnit, b: CorpusUnit): number | undefined {
    if (!this.slab) return a.vector && b.vector ? dot(a.vector, b.vector) : undefined;
    const rowA = this.links.get(a.seq)?.row ?? -1;
    const rowB = this.links.get(b.seq)?.row ?? -1;
    return rowA >= 0 && rowB >= 0 ? this.slab.dotRows(rowA, rowB) : undefined;
  }

  /** q·v for the units of `slots` (null: every slot) into `out`, from the floats or the int8 codes. */
  queryDots(query: Float32Array, slots: Int32Array | null, layout: SlotLayout, out: Float64Array): void {
    if (!this.slab) return dotsInto(query, slots, layout.units, out);
    const count = slots ? slots.length : layout.units.length;
    const rows = slots ? new Int32Array(count) : layout.row.subarray(0, count);
    if (slots) for (let k = 0; k < count; k++) rows[k] = layout.row[slots[k]];
    this.slab.dotsInto(query, rows, out);
  }
}
