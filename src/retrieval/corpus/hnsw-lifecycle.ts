import type { VectorIndex } from '../vector-index.js';
import type { UnitLinks } from './sessions.js';
import type { VectorStore } from './vector-store.js';

/**
 * A user's HNSW graph from attach to detach, and the units it does not hold yet: those written
 * while it is rebuilt or written to its file, and the re-embedded ones. Search asks it for
 * candidates only once it is complete enough (`searchable`).
 */
export class HnswLifecycle {
  private index: VectorIndex | null = null;
  /** Units whose vectors the graph does not hold yet, in the order they came. */
  readonly unindexed = new Set<number>();

  /** The graph, once attached. */
  get current(): VectorIndex | null {
    return this.index;
  }

  /** Whether the graph is attached and holds every unit. */
  get complete(): boolean {
    return this.index !== null && this.unindexed.size === 0;
  }

  /**
   * Attaches a graph, fresh or read from its cache: labels of units that are gone are marked
   * deleted, and units it lacks (but those waiting for a vector) wait for `indexPending`.
   */
  attach(index: VectorIndex, links: ReadonlyMap<number, UnitLinks>, unembedded: ReadonlySet<number>): void {
    for (const label of index.labels()) if (!links.has(label)) index.markDeletedOnLoad(label);
    for (const seq of links.keys()) if (!index.has(seq) && !unembedded.has(seq)) this.unindexed.add(seq);
    this.index = index;
  }

  /** Lets the graph go; returns the units that waited for it. */
  detach(): number[] {
    this.index = null;
    const waiting = [...this.unindexed];
    this.unindexed.clear();
    return waiting;
  }

  /**
   * A unit with a vector of the current model: into the graph now if it is attached, complete
   * and not being written to its file, and `defer` is not set; else it waits.
   */
  add(seq: number, vector: Float32Array, defer: boolean): void {
    if (!this.index || this.index.has(seq)) return;
    if (defer || this.unindexed.size > 0 || this.index.isWriting) this.unindexed.add(seq);
    else this.index.add(seq, vector);
  }

  /** A unit given a vector of the current model waits for the graph, if there is one. */
  awaitVector(seq: number): void {
    if (this.index) this.unindexed.add(seq);
  }

  remove(seq: number): void {
    this.index?.remove(seq);
    this.unindexed.delete(seq);
  }

  /**
   * Moves up to `count` waiting vectors into the graph, letting the store drop each float it no
   * longer needs; returns how many remain (all of them while the graph is written).
   */
  indexPending(count: number, links: ReadonlyMap<number, UnitLinks>, store: VectorStore): number {
    if (this.index?.isWriting) return this.unindexed.size;
    for (const seq of this.unindexed) {
      if (count-- <= 0) break;
      const link = links.get(seq);
      this.unindexed.delete(seq);
      if (!link) continue;
      const vector = store.graphVector(link);
      if (vector && this.index) this.index.add(seq, vector);
      store.take(link, false);
    }
    return this.unindexed.size;
  }

  /**
   * Whether a search may take its candidates from the graph (plus the units not in it yet): not
   * while most of the user's `size` units are missing from it (a rebuild), which scoring them
   * all handles faster.
   */
  searchable(size: number): boolean {
    return this.index !== null && this.unindexed.size * 2 <= size;
  }
}
