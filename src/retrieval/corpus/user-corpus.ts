import { analyze } from '../analyzer.js';
import { Bm25Index } from '../bm25-index.js';
import { EntityIndex } from '../entities/entity-index.js';
import { entitySpecificity, type CueColumns } from '../fuse-scores.js';
import type { RetrievalWeights } from '../retrieval-config.js';
import type { VectorIndex } from '../vector-index.js';
import { denseShares, lexicalShares } from './base-shares.js';
import { candidateSlots, positionsOf, scoredExhaustively } from './candidates.js';
import type { CorpusQuery, CorpusUnit, QueryText, RankedUnit } from './corpus-types.js';
import { cueColumns, cueQuery } from './cue-columns.js';
import { HnswLifecycle } from './hnsw-lifecycle.js';
import { rankCandidates } from './rank.js';
import { Sessions, unlinked, type UnitLinks } from './sessions.js';
import { buildLayout, everySlot, extendLayout, matchingSlots, type SlotLayout } from './slot-layout.js';
import { VectorStore } from './vector-store.js';

/**
 * The part of a search that needs no vector, done by `prepare` while the encoder works: the
 * candidates, each text's lexical share and every cue of the fused score.
 * `rank` redoes it when the corpus changed in between (its layout is then another object).
 */
export interface PreparedSearch {
  readonly query: CorpusQuery<QueryText>;
  /** The weights asked for (`rank` takes the dense half out while units wait for vectors). */
  readonly weights: RetrievalWeights;
  readonly layout: SlotLayout;
  /** Null when the candidates come from the HNSW index, which needs the vectors. */
  readonly scored: VectorFreeScores | null;
}

interface VectorFreeScores {
  candidates: Int32Array;
  position: (slot: number) => number;
  /** (1 − denseWeight) · norm(bm25) per candidate: the main text's, then each option's. */
  lexical: Float64Array[];
  cues: CueColumns;
}

/**
 * One user's searchable memory: a BM25 index, an HNSW graph and the units' vectors, plus the
 * session order that links each turn to its neighbours. Scoring follows `fuse-scores.ts`.
 */
export class UserCorpus {
  private readonly lexical = new Bm25Index();
  private readonly links = new Map<number, UnitLinks>();
  private readonly store = new VectorStore(this.links);
  private readonly graph = new HnswLifecycle();
  private readonly sessions = new Sessions(this.links, (a, b) => this.store.dotOfUnits(a, b));
  private readonly speakerCounts = new Map<string, number>();
  /** The user's entities → the units mentioning them, kept with every add and remove. */
  readonly entities = new EntityIndex((word) => {
    const terms = analyze(word);
    return terms.length === 1 ? this.lexical.documentFrequency(terms[0]) : Infinity;
  });
  private newestTime = -Infinity;
  private layout: SlotLayout | null = null;

  /** The HNSW index, once attached: users scored exhaustively need it only when they are written to. */
  get vectors(): VectorIndex | null {
    return this.graph.current;
  }

  /** Whether the HNSW index is attached and holds every unit (search uses it only then). */
  get vectorIndexComplete(): boolean {
    return this.graph.complete;
  }

  /**
   * Attaches an HNSW index, fresh or read from its cache (see `HnswLifecycle.attach`). A user
   * that keeps a graph holds its vectors compactly from then on (`compactVectors`).
   */
  attachVectorIndex(index: VectorIndex): void {
    this.graph.attach(index, this.links, this.store.unembedded);
    this.compactVectors(index.dimensions);
  }

  /** Whether the units' vectors are held as int8 codes (see `VectorStore.compact`). */
  get vectorsCompact(): boolean {
    return this.store.isCompact;
  }

  /** Holds the units' vectors as int8 codes from now on (see `VectorStore.compact`). */
  compactVectors(dimensions: number): void {
    if (this.store.compact(dimensions, (seq) => this.graph.unindexed.has(seq))) this.layout = null;
  }

  /** How many units wait for a vector of the current model. */
  get unembeddedCount(): number {
    return this.store.unembedded.size;
  }

  /** Units waiting for a vector of the current model, in no particular order. */
  get unembeddedSeqs(): number[] {
    return [...this.store.unembedded];
  }

  /**
   * Gives re-embedded units their vector of the current model. The units stay out of dense
   * scoring, like every other unit of the user, until the last one has its vector (see `rank`).
   */
  setVectors(entries: ReadonlyArray<{ seq: number; vector: Float32Array }>): void {
    this.layout = null;
    for (const { seq, vector } of entries) {
      const link = this.links.get(seq);
      if (!link || !this.store.unembedded.delete(seq)) continue;
      link.unit.vector = vector;
      this.graph.awaitVector(seq);
      this.store.take(link, this.graph.unindexed.has(seq));
    }
    // The previous-turn dots of the updated units and of the units after them.
    for (const link of this.links.values()) {
      if (link.previous && link.selfDotPrevious === undefined) link.selfDotPrevious = this.store.dotOfUnits(link.unit, link.previous);
    }
  }

  get size(): number {
    return this.links.size;
  }

  /** Time of the user's newest unit (decay and relative dates count from it), or now when empty. */
  get newestTimeMs(): number {
    return Number.isFinite(this.newestTime) ? this.newestTime : Date.now();
  }

  get speakers(): string[] {
    return [...this.speakerCounts.keys()];
  }

  has(seq: number): boolean {
    return this.links.has(seq);
  }

  /** The unit's vector as search scores it (see `VectorStore.vectorOf`). */
  vectorOf(seq: number): Float32Array | undefined {
    const link = this.links.get(seq);
    return link ? this.store.vectorOf(link) : undefined;
  }

  /**
   * Adds units, searchable at once. Their vectors enter the HNSW index now if one is attached,
   * complete and not being written to its file, and `deferIndex` is not set; else later through
   * `indexPending`.
   */
  add(units: readonly CorpusUnit[], deferIndex = false): void {
    const before = this.layout;
    let appendOnly = before !== null;
    this.layout = null;
    const touchedSessions = new Set<string>();
    const documents: Array<{ key: number; terms: readonly string[] }> = [];
    for (const unit of units) {
      if (this.links.has(unit.seq)) {
        this.remove(unit.seq);
        appendOnly = false;
      }
      const link = unlinked(unit);
      this.links.set(unit.seq, link);
      documents.push({ key: unit.seq, terms: unit.terms });
      this.entities.add(unit.seq, unit.entities);
      if (unit.vector === null) this.store.unembedded.add(unit.seq);
      else this.graph.add(unit.seq, unit.vector, deferIndex);
      this.store.take(link, this.graph.unindexed.has(unit.seq));
      if (unit.speaker) this.speakerCounts.set(unit.speaker, (this.speakerCounts.get(unit.speaker) ?? 0) + 1);
      if (unit.timeMs > this.newestTime) this.newestTime = unit.timeMs;
      if (unit.sessionId !== null) {
        this.sessions.join(unit.sessionId, unit);
        touchedSessions.add(unit.sessionId);
      }
    }
    // Nothing above reads the BM25 index: a batch's terms go in at once (a load's lists grow once).
    this.lexical.addMany(documents);
    for (const sessionId of touchedSessions) this.sessions.relink(sessionId);
    if (appendOnly && before !== null) this.layout = extendLayout(before, units, touchedSessions, this.sessions, this.links);
  }

  /** Lets the HNSW index go (its file stays current on disk); search stays exhaustive (from the codes, if compact). */
  detachVectorIndex(): void {
    for (const seq of this.graph.detach()) {
      const link = this.links.get(seq);
      if (link) this.store.take(link, false);
    }
  }

  /** Moves up to `count` deferred vectors into the HNSW index; returns how many remain (all of them while the index is written). */
  indexPending(count: number): number {
    return this.graph.indexPending(count, this.links, this.store);
  }

  remove(seq: number): void {
    const link = this.links.get(seq);
    if (!link) return;
    this.layout = null;
    const { unit } = link;
    this.links.delete(seq);
    this.store.release(link);
    this.lexical.remove(seq);
    this.entities.remove(seq, unit.entities);
    this.graph.remove(seq);
    this.store.unembedded.delete(seq);
    if (unit.speaker) {
      const count = (this.speakerCounts.get(unit.speaker) ?? 1) - 1;
      if (count <= 0) this.speakerCounts.delete(unit.speaker);
      else this.speakerCounts.set(unit.speaker, count);
    }
    if (unit.sessionId !== null) this.sessions.leave(unit.sessionId, seq);
    if (unit.timeMs >= this.newestTime) {
      this.newestTime = -Infinity;
      for (const other of this.links.values()) if (other.unit.timeMs > this.newestTime) this.newestTime = other.unit.timeMs;
    }
  }

  /**
   * Ranks the user's units for a query; sorted before the cut, ties broken by newer first.
   * Scoring works on typed arrays indexed by slot (see `SlotLayout`): no per-request Map, no string.
   */
  search(query: CorpusQuery, weights: RetrievalWeights, limit: number): RankedUnit[] {
    return this.rank(this.prepare(query, weights), [query.main.vector, ...query.options.map((option) => option.vector)], limit);
  }

  /**
   * Everything of a search that needs no vector (BM25, the cues), so that a caller can do it
   * while the encoder computes the query's vectors, then call `rank`.
   */
  prepare(query: CorpusQuery<QueryText>, requested: RetrievalWeights): PreparedSearch {
    const weights = this.usableWeights(requested);
    const layout = this.currentLayout();
    const matching = query.filter ? matchingSlots(layout, query.filter) : null;
    if (!scoredExhaustively(weights, matching, this.links.size, this.graph)) return { query, weights: requested, layout, scored: null };
    return { query, weights: requested, layout, scored: this.vectorFreeScores(query, weights, layout, matching ?? everySlot(layout)) };
  }

  /**
   * Ranks a prepared search given the vectors of its texts (the main one, then the options);
   * `seen`, when given, is told how many candidates were scored (a trace's span shows it).
   */
  rank(prepared: PreparedSearch, vectors: readonly Float32Array[], limit: number, seen?: { candidates: number }): RankedUnit[] {
    if (this.links.size === 0 || limit <= 0) return [];
    const { query } = prepared;
    const weights = this.usableWeights(prepared.weights);
    const layout = this.currentLayout();
    // Vectors that came in since `prepare` changed the layout, and perhaps the usable weights.
    let scored = prepared.layout === layout ? prepared.scored : null;
    if (scored === null) {
      const candidates = candidateSlots(query, vectors, weights, layout, this.lexical, this.graph, this.entityUnits(query, weights));
      scored = this.vectorFreeScores(query, weights, layout, candidates);
    }
    const { candidates, position } = scored;
    if (seen) seen.candidates = candidates.length;
    const texts = query.options.length > 0 && weights.optionWeight > 0 ? 1 + query.options.length : 1;
    const dense: Float64Array[] = [];
    for (let t = 0; t < texts; t++) dense.push(denseShares(vectors[t], candidates, position, weights, layout, this.store));
    return rankCandidates({ candidates, position, dense, lexical: scored.lexical, cues: scored.cues }, layout, weights, query, limit);
  }

  /**
   * The weights a search of this user can use: without the dense half while any unit waits for
   * its vector of the current model. Scoring only the re-embedded units' cosines would favour them
   * over the rest, and the old vectors cannot be compared with this model's query; BM25 and the
   * cues rank every unit alike until the user's re-embedding is done.
   */
  private usableWeights(weights: RetrievalWeights): RetrievalWeights {
    return this.store.unembedded.size > 0 && weights.denseWeight > 0 ? { ...weights, denseWeight: 0 } : weights;
  }

  /** The specificity of each entity of the query this user knows (see `entitySpecificity`); none while the cue is off. */
  private entityWeights(query: CorpusQuery<QueryText>, weights: RetrievalWeights): Map<string, number> {
    const out = new Map<string, number>();
    if (weights.entityBoost === 0 || !query.entities) return out;
    for (const key of query.entities) {
      const entry = this.entities.get(key);
      if (entry) out.set(key, entitySpecificity(entry.seqs.size, this.links.size));
    }
    return out;
  }

  /**
   * The units of the query's known entities, for a large user's candidates: each entity's newest
   * `candidatePool`, the most specific entity first. A speaker's are left to the lists (half the
   * user's units say nothing a rank could use).
   */
  private entityUnits(query: CorpusQuery<QueryText>, weights: RetrievalWeights): number[] {
    const out: number[] = [];
    for (const [key, specificity] of [...this.entityWeights(query, weights)].sort((a, b) => b[1] - a[1])) {
      const seqs = this.entities.get(key)!.seqs;
      if (seqs.size > weights.candidatePool || specificity === 0) continue;
      for (const seq of seqs) out.push(seq);
    }
    return out;
  }

  /** The candidates' lexical shares and cues (see `PreparedSearch`). */
  private vectorFreeScores(query: CorpusQuery<QueryText>, weights: RetrievalWeights, layout: SlotLayout, candidates: Int32Array): VectorFreeScores {
    const position = positionsOf(candidates, layout.units.length);
    const lexical = [query.main, ...query.options].map((text) => lexicalShares(text, candidates, position, weights, layout, this.lexical));
    const cues = cueColumns(layout.units, layout.catchUpTurn, candidates, cueQuery(query, weights, this.newestTime, this.entityWeights(query, weights)), weights);
    return { candidates, position, lexical, cues };
  }

  /**
   * The slot layout of the units, rebuilt after a change other than an append (removes and
   * re-embeddings are rare next to searches); an append extends it (see `extendLayout`).
   */
  private currentLayout(): SlotLayout {
    if (this.layout === null) this.layout = buildLayout(this.links);
    return this.layout;
  }
}
