import type { Bm25Index } from '../bm25-index.js';
import type { RetrievalWeights } from '../retrieval-config.js';
import type { CorpusQuery, QueryText } from './corpus-types.js';
import type { HnswLifecycle } from './hnsw-lifecycle.js';
import { everySlot, matchingSlots, type SlotLayout } from './slot-layout.js';

/**
 * Candidates fewer than 1 / SPARSE_SHARE of the units are scored through lookups by slot rather than
 * arrays over every unit: the same numbers, at a cost that follows the candidates, not the user.
 */
export const SPARSE_SHARE = 8;

/** Where each slot sits among the candidates, -1 when not one: a neighbour outside them shares nothing. */
export function positionsOf(candidates: Int32Array, unitCount: number): (slot: number) => number {
  if (candidates.length * SPARSE_SHARE < unitCount) {
    const positions = new Map<number, number>();
    for (let i = 0; i < candidates.length; i++) positions.set(candidates[i], i);
    return (slot) => positions.get(slot) ?? -1;
  }
  const positions = new Int32Array(unitCount).fill(-1);
  for (let i = 0; i < candidates.length; i++) positions[candidates[i]] = i;
  return (slot) => positions[slot];
}

/**
 * Small users are scored exhaustively; larger ones once their graph can give the candidates. A
 * filter matching no more units than a small user has (`matching`) is scored exhaustively among
 * them, whatever the size of the user: cheaper than the graph, and every match counts.
 */
export function scoredExhaustively(weights: RetrievalWeights, matching: Int32Array | null, size: number, graph: HnswLifecycle): boolean {
  return (matching ? matching.length : size) <= weights.exhaustiveLimit || !graph.searchable(size);
}

/**
 * Every (matching) slot for users scored exhaustively; else the slots of the best BM25 and HNSW
 * candidates of each text that match, the units the graph lacks, the units of the query's
 * entities (`entityUnits`, seqs), and their session neighbours.
 */
export function candidateSlots(
  query: CorpusQuery<QueryText>,
  vectors: readonly Float32Array[],
  weights: RetrievalWeights,
  layout: SlotLayout,
  lexical: Bm25Index,
  graph: HnswLifecycle,
  entityUnits: readonly number[] = [],
): Int32Array {
  const matching = query.filter ? matchingSlots(layout, query.filter) : null;
  if (scoredExhaustively(weights, matching, layout.units.length, graph)) return matching ?? everySlot(layout);

  // Past that: the best BM25 and HNSW candidates of each text, plus their session neighbours.
  // Units not in the graph yet (writes acknowledged a moment ago) are always scored.
  // With a filter, both lists are taken among the matching units (the graph searches with it),
  // so the pools are as full as without one.
  const { filter } = query;
  const passesSlot = (slot: number): boolean => slot >= 0 && (!filter || filter(layout.units[slot]));
  const passes = filter ? (seq: number) => passesSlot(layout.slotOfSeq.get(seq) ?? -1) : undefined;
  const chosen = new Set<number>();
  const choose = (seq: number): void => {
    const slot = layout.slotOfSeq.get(seq);
    if (slot !== undefined) chosen.add(slot);
  };
  for (const seq of graph.unindexed) if (!passes || passes(seq)) choose(seq);
  for (const seq of entityUnits) if (!passes || passes(seq)) choose(seq);
  [query.main, ...query.options].forEach((text, t) => {
    for (const { key } of lexical.topKeys(text.terms, weights.candidatePool, passes, text.termWeights)) choose(key);
    for (const hit of graph.current!.search(vectors[t], weights.candidatePool, passes)) choose(hit.label);
  });
  const out = new Set(chosen);
  for (const slot of chosen) {
    for (const neighbour of [layout.previous[slot], layout.next[slot], layout.previousTurn[slot], layout.nextTurn[slot]]) if (passesSlot(neighbour)) out.add(neighbour);
  }
  return Int32Array.from(out);
}
