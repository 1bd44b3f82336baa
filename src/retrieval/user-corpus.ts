import { Bm25Index } from './bm25-index.js';
import {
  contextCosine,
  decayMultiplier,
  disclosureCue,
  fuseColumnsAt,
  fuseScore,
  importanceMultiplier,
  instantCoincidence,
  minMaxNormalize,
  partsAt,
  periodCoincidence,
  tagBoost,
  timeCue,
  withNeighbours,
  type FusedColumns,
  type FusedPartName,
  type ScoreExplanation,
  type ScoreTerm,
} from './fuse-scores.js';
import { Int8VectorSlab } from './int8-vector-slab.js';
import type { RetrievalWeights } from './retrieval-config.js';
import type { TimePeriod } from './time-cues.js';
import { VectorIndex } from './vector-index.js';

/** What retrieval knows of one stored unit. */
export interface CorpusUnit {
  seq: number;
  /**
   * The unit's vector by the current encoder; null while it waits to be re-embedded after a model
   * change (its stored vector is another model's, which must never meet this model's queries).
   * A corpus holding its vectors compactly (see `UserCorpus.compactVectors`) takes it into its
   * slab and lets it go once the HNSW graph has its copy: read vectors through the corpus.
   */
  vector: Float32Array | null;
  /** Index terms of the unit's lexical text (analyzer output). */
  terms: readonly string[];
  /** Lowercased speaker name, or null. */
  speaker: string | null;
  sessionId: string | null;
  /** Units split from one message share it; null for a unit that is a whole memory. */
  messageKey: string | null;
  timeMs: number;
  importance: number;
  /** Lowercased tags. */
  tags: readonly string[];
  hasTimeExpression: boolean;
  /** When the event the unit tells of happened: its time expressions resolved against its own date. */
  eventPeriod: TimePeriod | null;
  /** A question between named speakers (penalised a little, see `questionTurnPenalty`). */
  isQuestion: boolean;
  /** The speaker speaks of themself (`speaksOfSelf`): see `disclosureCue`. */
  firstPerson: boolean;
  /** The text as duplicates share it (`duplicateKey`): answers that collapse duplicates hold each once. */
  textKey: string;
}

/** A query text as analysed: its index terms. */
export interface QueryText {
  terms: readonly string[];
}

/** A query made ready for scoring: its terms and its vector. */
export interface PreparedText extends QueryText {
  vector: Float32Array;
}

/** A query; `T` is `QueryText` before the encoder has given its vectors (see `prepare`). */
export interface CorpusQuery<T extends QueryText = PreparedText> {
  main: T;
  /** Extra queries (multiple-choice answers) fused into the main one. */
  options: readonly T[];
  /** Lowercased speaker the query names, if exactly one known speaker. */
  speaker: string | null;
  /** Lowercased generic role (user, assistant) the query is about, if any. */
  role?: string | null;
  /** Lowercased tags whose exact presence on a unit is rewarded. */
  wantedTags: ReadonlySet<string>;
  whenQuestion: boolean;
  /** The query asks about a person rather than one event (`asksAboutPerson`). */
  aboutPerson?: boolean;
  period: TimePeriod | null;
  /**
   * Ranks only the units passing it (the request's filter): they are the candidates, so the
   * normalisations, the neighbours' shares and the cut all see the matching units only, and a
   * rare filter still fills the limit.
   */
  filter?: (unit: CorpusUnit) => boolean;
  /** Hold each distinct `textKey` once: the best-scored unit (the newest on ties), with the count of the others. */
  collapseDuplicates?: boolean;
  /** Return each unit's score broken into its terms (costs nothing when off). */
  explain?: boolean;
}

/**
 * The part of a search that needs no vector, done by `prepare` while the encoder works: the
 * candidates, each text's lexical share and every term of the fused score but the dense ones.
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
  /** Position of a slot among the candidates, -1 when not one: a neighbour outside them shares nothing. */
  position: (slot: number) => number;
  /** (1 − denseWeight) · norm(bm25) per candidate: the main text's, then each option's. */
  lexical: Float64Array[];
  terms: UnitTerms;
}

/** The parts of the fused score that depend on the unit and the query's cues only, per candidate. */
type CueColumns = { [K in Exclude<FusedPartName, 'dense' | 'bm25' | 'options' | 'neighbours'>]: Float64Array };

type UnitTerms = CueColumns;

export interface RankedUnit {
  seq: number;
  score: number;
  explanation?: ScoreExplanation;
  /** With `collapseDuplicates`: other matching units of the same text folded into this one. */
  duplicates?: number;
}

/**
 * The units in slots 0..n-1 with their neighbours as slot numbers (-1: none), so that a search
 * scores in typed arrays. Derived from `links`, and dropped whenever they change.
 */
interface SlotLayout {
  units: CorpusUnit[];
  slotOfSeq: Map<number, number>;
  previous: Int32Array;
  next: Int32Array;
  previousTurn: Int32Array;
  nextTurn: Int32Array;
  /** v·p with the previous unit's vector; NaN when there is none. */
  selfDotPrevious: Float64Array;
  /** Units split from one message share an id; -1 for a unit that is a whole memory. */
  message: Int32Array;
  messageCount: number;
  /** 1 for a unit of the first two turns of its session (see `timeCue`). */
  catchUpTurn: Uint8Array;
  /** Units of the same `textKey` share an id. */
  text: Int32Array;
  /** The unit's row in the corpus's int8 slab (-1: none); unused while the corpus holds floats. */
  row: Int32Array;
  textCount: number;
  /** The ids given so far, kept so an append gives a new unit the id its key already has. */
  messageIds: Map<string, number>;
  textIds: Map<string, number>;
}

interface UnitLinks {
  unit: CorpusUnit;
  /** Adjacent units in the session (a sibling part of the same message, or another message). */
  previous: CorpusUnit | null;
  next: CorpusUnit | null;
  /** Nearest units of the neighbouring messages: the turn before and the turn after. */
  previousTurn: CorpusUnit | null;
  nextTurn: CorpusUnit | null;
  /** v·p with the previous unit's vector, for the context blend. */
  selfDotPrevious: number | undefined;
  /** The unit's row in the int8 slab once the corpus holds its vectors compactly; -1 before, or without a vector. */
  row: number;
}

/**
 * One user's searchable memory: a BM25 index, an HNSW index and the units' vectors, plus the
 * session order that links each turn to its neighbours. Scoring follows `fuse-scores.ts`.
 */
export class UserCorpus {
  private vectorIndex: VectorIndex | null = null;
  private readonly lexical = new Bm25Index();
  private readonly links = new Map<number, UnitLinks>();
  private readonly sessions = new Map<string, CorpusUnit[]>();
  private readonly speakerCounts = new Map<string, number>();
  private newestTime = -Infinity;
  private layout: SlotLayout | null = null;

  /** Units whose vectors the HNSW index does not hold yet (a rebuild in progress). */
  private readonly unindexed = new Set<number>();
  /** Units without a vector of the current model (re-embedding in the background). */
  private readonly unembedded = new Set<number>();
  /**
   * The units' vectors as int8 codes, once the user keeps an HNSW graph (see `compactVectors`);
   * null while each unit holds its Float32Array (users scored exhaustively, bit for bit as before).
   */
  private slab: Int8VectorSlab | null = null;

  /** The HNSW index, once attached: users scored exhaustively need it only when they are written to. */
  get vectors(): VectorIndex | null {
    return this.vectorIndex;
  }

  /** Whether the HNSW index is attached and holds every unit (search uses it only then). */
  get vectorIndexComplete(): boolean {
    return this.vectorIndex !== null && this.unindexed.size === 0;
  }

  /**
   * Attaches an HNSW index, fresh or read from its cache: labels of units that are gone are
   * marked deleted, and units it lacks wait in `unindexed` for `indexPending`. A user that keeps a
   * graph holds its vectors compactly from then on (`compactVectors`).
   */
  attachVectorIndex(index: VectorIndex): void {
    for (const label of index.labels()) if (!this.links.has(label)) index.markDeletedOnLoad(label);
    for (const seq of this.links.keys()) if (!index.has(seq) && !this.unembedded.has(seq)) this.unindexed.add(seq);
    this.vectorIndex = index;
    this.compactVectors(index.dimensions);
  }

  /** Whether the units' vectors are held as int8 codes (see `compactVectors`). */
  get vectorsCompact(): boolean {
    return this.slab !== null;
  }

  /**
   * Moves every unit's vector into an int8 slab: a quarter of the bytes, and no typed-array
   * objects per unit. Dense scores come from the codes from then on, for every unit alike (a
   * ranking must not depend on which units the graph holds yet); a unit keeps its float vector
   * only until the graph has taken it (`indexPending`), so the graph is built from exact vectors.
   * Only users that keep a graph take this: they are the memory's bulk, their graph keeps a float
   * copy of its own, and the dev sets' recall with every user on that path held (bench/HISTORY.md).
   */
  compactVectors(dimensions: number): void {
    if (this.slab) return;
    this.layout = null;
    this.slab = new Int8VectorSlab(dimensions, this.links.size);
    for (const link of this.links.values()) this.takeIntoSlab(link);
    // The context blend's dots, from the codes as every later one is.
    for (const link of this.links.values()) link.selfDotPrevious = link.previous ? this.dotOfUnits(link.unit, link.previous) : undefined;
  }

  /** How many units wait for a vector of the current model. */
  get unembeddedCount(): number {
    return this.unembedded.size;
  }

  /** Units waiting for a vector of the current model, in no particular order. */
  get unembeddedSeqs(): number[] {
    return [...this.unembedded];
  }

  /**
   * Gives re-embedded units their vector of the current model. The units stay out of dense
   * scoring, like every other unit of the user, until the last one has its vector (see `rank`).
   */
  setVectors(entries: ReadonlyArray<{ seq: number; vector: Float32Array }>): void {
    this.layout = null;
    for (const { seq, vector } of entries) {
      const link = this.links.get(seq);
      if (!link || !this.unembedded.delete(seq)) continue;
      link.unit.vector = vector;
      if (this.vectorIndex) this.unindexed.add(seq);
      this.takeIntoSlab(link);
    }
    // The previous-turn dots of the updated units and of the units after them.
    for (const link of this.links.values()) {
      if (link.previous && link.selfDotPrevious === undefined) link.selfDotPrevious = this.dotOfUnits(link.unit, link.previous);
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

  /**
   * The unit's vector as search scores it: held compactly, the codes' vector (a fresh array, the
   * same whether or not the graph has taken the float yet); the exact one is the store's.
   */
  vectorOf(seq: number): Float32Array | undefined {
    const link = this.links.get(seq);
    if (!link) return undefined;
    if (this.slab) return link.row >= 0 ? this.slab.vector(link.row) : undefined;
    return link.unit.vector ?? undefined;
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
    for (const unit of units) {
      if (this.links.has(unit.seq)) {
        this.remove(unit.seq);
        appendOnly = false;
      }
      const link: UnitLinks = { unit, previous: null, next: null, previousTurn: null, nextTurn: null, selfDotPrevious: undefined, row: -1 };
      this.links.set(unit.seq, link);
      this.lexical.add(unit.seq, unit.terms);
      if (unit.vector === null) this.unembedded.add(unit.seq);
      else if (this.vectorIndex && !this.vectorIndex.has(unit.seq)) {
        if (deferIndex || this.unindexed.size > 0 || this.vectorIndex.isWriting) this.unindexed.add(unit.seq);
        else this.vectorIndex.add(unit.seq, unit.vector);
      }
      this.takeIntoSlab(link);
      if (unit.speaker) this.speakerCounts.set(unit.speaker, (this.speakerCounts.get(unit.speaker) ?? 0) + 1);
      if (unit.timeMs > this.newestTime) this.newestTime = unit.timeMs;
      if (unit.sessionId !== null) {
        let session = this.sessions.get(unit.sessionId);
        if (!session) this.sessions.set(unit.sessionId, (session = []));
        session.push(unit);
        touchedSessions.add(unit.sessionId);
      }
    }
    for (const sessionId of touchedSessions) this.relink(sessionId);
    if (appendOnly && before !== null) this.layout = this.extendLayout(before, units, touchedSessions);
  }

  /** Lets the HNSW index go (its file stays current on disk); search stays exhaustive (from the codes, if compact). */
  detachVectorIndex(): void {
    this.vectorIndex = null;
    const waiting = [...this.unindexed];
    this.unindexed.clear();
    for (const seq of waiting) {
      const link = this.links.get(seq);
      if (link) this.takeIntoSlab(link);
    }
  }

  /** Moves up to `count` deferred vectors into the HNSW index; returns how many remain (all of them while the index is written). */
  indexPending(count: number): number {
    if (this.vectorIndex?.isWriting) return this.unindexed.size;
    for (const seq of this.unindexed) {
      if (count-- <= 0) break;
      const link = this.links.get(seq);
      this.unindexed.delete(seq);
      if (!link) continue;
      const vector = link.unit.vector ?? (this.slab && link.row >= 0 ? this.slab.vector(link.row) : null);
      if (vector && this.vectorIndex) this.vectorIndex.add(seq, vector);
      this.takeIntoSlab(link);
    }
    return this.unindexed.size;
  }

  /**
   * Held compactly: gives the unit its row (from its float vector) if it has none, and drops the
   * float once no graph insert waits for it. Holding floats: nothing.
   */
  private takeIntoSlab(link: UnitLinks): void {
    if (!this.slab) return;
    const { unit } = link;
    if (unit.vector === null) return;
    if (link.row < 0) link.row = this.slab.put(unit.vector);
    if (!this.unindexed.has(unit.seq)) unit.vector = null;
  }

  remove(seq: number): void {
    const link = this.links.get(seq);
    if (!link) return;
    this.layout = null;
    const { unit } = link;
    this.links.delete(seq);
    if (this.slab && link.row >= 0) this.slab.release(link.row);
    this.lexical.remove(seq);
    this.vectorIndex?.remove(seq);
    this.unindexed.delete(seq);
    this.unembedded.delete(seq);
    if (unit.speaker) {
      const count = (this.speakerCounts.get(unit.speaker) ?? 1) - 1;
      if (count <= 0) this.speakerCounts.delete(unit.speaker);
      else this.speakerCounts.set(unit.speaker, count);
    }
    if (unit.sessionId !== null) {
      const session = this.sessions.get(unit.sessionId);
      if (session) {
        const remaining = session.filter((member) => member.seq !== seq);
        if (remaining.length === 0) this.sessions.delete(unit.sessionId);
        else this.sessions.set(unit.sessionId, remaining);
        this.relink(unit.sessionId);
      }
    }
    if (unit.timeMs >= this.newestTime) {
      this.newestTime = -Infinity;
      for (const other of this.links.values()) if (other.unit.timeMs > this.newestTime) this.newestTime = other.unit.timeMs;
    }
  }

  /**
   * Ranks the user's units for a query; sorted before the cut, ties broken by newer first.
   * Scoring works on typed arrays indexed by slot (see `layout`): no per-request Map, no string.
   */
  search(query: CorpusQuery, weights: RetrievalWeights, limit: number): RankedUnit[] {
    return this.rank(this.prepare(query, weights), [query.main.vector, ...query.options.map((option) => option.vector)], limit);
  }

  /**
   * Everything of a search that needs no vector (BM25, the cues' terms), so that a caller can
   * do it while the encoder computes the query's vectors, then call `rank`.
   */
  prepare(query: CorpusQuery<QueryText>, requested: RetrievalWeights): PreparedSearch {
    const weights = this.usableWeights(requested);
    const layout = this.currentLayout();
    const matching = query.filter ? matchingSlots(layout, query.filter) : null;
    if (!this.scoredExhaustively(weights, matching)) return { query, weights: requested, layout, scored: null };
    return { query, weights: requested, layout, scored: this.vectorFreeScores(query, weights, layout, matching ?? everySlot(layout)) };
  }

  /** Ranks a prepared search given the vectors of its texts (the main one, then the options). */
  rank(prepared: PreparedSearch, vectors: readonly Float32Array[], limit: number): RankedUnit[] {
    if (this.links.size === 0 || limit <= 0) return [];
    const { query } = prepared;
    const weights = this.usableWeights(prepared.weights);
    const layout = this.currentLayout();
    // Vectors that came in since `prepare` changed the layout, and perhaps the usable weights.
    let scored = prepared.layout === layout ? prepared.scored : null;
    if (scored === null) {
      const candidates = this.candidateSlots(query, vectors, weights, layout);
      scored = this.vectorFreeScores(query, weights, layout, candidates);
    }
    const { candidates, position, lexical, terms } = scored;
    const count = candidates.length;

    const mainDense = this.denseShares(vectors[0], candidates, position, weights, layout);
    const optionShare = new Float64Array(count);
    if (query.options.length > 0 && weights.optionWeight > 0) {
      for (let o = 0; o < query.options.length; o++) {
        const dense = this.denseShares(vectors[o + 1], candidates, position, weights, layout);
        const optionLexical = lexical[o + 1];
        for (let i = 0; i < count; i++) optionShare[i] = Math.max(optionShare[i], dense[i] + optionLexical[i]);
      }
      for (let i = 0; i < count; i++) optionShare[i] *= weights.optionWeight;
    }
    const mainLexical = lexical[0];
    // The base score (what neighbours share) is the first three terms, summed as fuseScore sums them.
    const base = new Float64Array(count);
    for (let i = 0; i < count; i++) base[i] = mainDense[i] + mainLexical[i] + optionShare[i];

    const neighbours = new Float64Array(count);
    for (let i = 0; i < count; i++) {
      const slot = candidates[i];
      const previousTurn = layout.previousTurn[slot] >= 0 ? position(layout.previousTurn[slot]) : -1;
      const nextTurn = layout.nextTurn[slot] >= 0 ? position(layout.nextTurn[slot]) : -1;
      neighbours[i] = withNeighbours(0, previousTurn >= 0 ? base[previousTurn] : undefined, nextTurn >= 0 ? base[nextTurn] : undefined, weights.neighbourWeight);
    }
    const columns: FusedColumns = { ...terms, dense: mainDense, bm25: mainLexical, options: optionShare, neighbours };

    const score = new Float64Array(count);
    const seqs = new Float64Array(count);
    const order = new Uint32Array(count);
    for (let i = 0; i < count; i++) {
      score[i] = fuseColumnsAt(columns, i);
      seqs[i] = layout.units[candidates[i]].seq;
      order[i] = i;
    }
    const ranked = order.sort((a, b) => score[b] - score[a] || seqs[b] - seqs[a]);
    // Copies of one text among the candidates, so that the one answered can say how many it stands for.
    const copies = query.collapseDuplicates ? new Int32Array(layout.textCount) : null;
    if (copies) for (let i = 0; i < count; i++) copies[layout.text[candidates[i]]]++;

    // One result per message, its best part: the parts of one long message would otherwise crowd
    // the top of the list with one turn, and a result stands for the turn it comes from.
    const seenMessage = new Uint8Array(layout.messageCount);
    const seenText = copies ? new Uint8Array(layout.textCount) : null;
    const out: RankedUnit[] = [];
    for (let r = 0; r < ranked.length && out.length < limit; r++) {
      const i = ranked[r];
      const message = layout.message[candidates[i]];
      if (message >= 0) {
        if (seenMessage[message] === 1) continue;
        seenMessage[message] = 1;
      }
      const text = layout.text[candidates[i]];
      if (seenText) {
        if (seenText[text] === 1) continue;
        seenText[text] = 1;
      }
      const seq = seqs[i];
      const unit: RankedUnit = { seq, score: score[i] };
      if (copies && copies[text] > 1) unit.duplicates = copies[text] - 1;
      if (query.explain) {
        // fuseScore's own computation, this time listing its terms: fuseColumnsAt repeats it exactly.
        const explainedTerms: ScoreTerm[] = [];
        const explained = fuseScore(partsAt(columns, i), explainedTerms);
        unit.score = explained;
        unit.explanation = { score: explained, terms: explainedTerms };
      }
      out.push(unit);
    }
    return out;
  }

  /**
   * The weights a search of this user can use: without the dense half while any unit waits for
   * its vector of the current model. Scoring only the re-embedded units' cosines would favour them
   * over the rest, and the old vectors cannot be compared with this model's query; BM25 and the
   * cues rank every unit alike until the user's re-embedding is done.
   */
  private usableWeights(weights: RetrievalWeights): RetrievalWeights {
    return this.unembedded.size > 0 && weights.denseWeight > 0 ? { ...weights, denseWeight: 0 } : weights;
  }

  /** The candidates' lexical shares and vector-free terms (see `PreparedSearch`). */
  private vectorFreeScores(query: CorpusQuery<QueryText>, weights: RetrievalWeights, layout: SlotLayout, candidates: Int32Array): VectorFreeScores {
    let position: (slot: number) => number;
    if (candidates.length * SPARSE_SHARE < layout.units.length) {
      const positions = new Map<number, number>();
      for (let i = 0; i < candidates.length; i++) positions.set(candidates[i], i);
      position = (slot) => positions.get(slot) ?? -1;
    } else {
      const positions = new Int32Array(layout.units.length).fill(-1);
      for (let i = 0; i < candidates.length; i++) positions[candidates[i]] = i;
      position = (slot) => positions[slot];
    }
    const lexical = [query.main, ...query.options].map((text) => this.lexicalShares(text, candidates, position, weights, layout));
    return { candidates, position, lexical, terms: this.unitTerms(query, weights, layout, candidates) };
  }

  private unitTerms(query: CorpusQuery<QueryText>, weights: RetrievalWeights, layout: SlotLayout, candidates: Int32Array): UnitTerms {
    const count = candidates.length;
    const terms: UnitTerms = {
      speaker: new Float64Array(count),
      role: new Float64Array(count),
      tags: new Float64Array(count),
      timeCue: new Float64Array(count),
      period: new Float64Array(count),
      eventPeriod: new Float64Array(count),
      questionTurn: new Float64Array(count),
      disclosure: new Float64Array(count),
      importance: new Float64Array(count),
      decay: new Float64Array(count),
    };
    // A cue the query lacks leaves its column at 0 for every unit: only the present ones loop.
    const { speaker, role, period, wantedTags } = query;
    const queried = weights.disclosureBoost !== 0 || weights.aboutPersonBoost !== 0 ? (speaker ?? role ?? null) : null;
    const aboutPerson = query.aboutPerson === true;
    for (let i = 0; i < count; i++) {
      const unit = layout.units[candidates[i]];
      if (speaker !== null && unit.speaker === speaker) terms.speaker[i] = weights.speakerBoost;
      if (role && unit.speaker === role) terms.role[i] = weights.roleBoost;
      if (unit.tags.length > 0) terms.tags[i] = tagBoost(unit.tags, wantedTags, weights.tagBoost);
      if (query.whenQuestion) terms.timeCue[i] = timeCue(query.whenQuestion, unit.hasTimeExpression, layout.catchUpTurn[candidates[i]] === 1, weights);
      if (period) {
        terms.period[i] = weights.periodBoost * instantCoincidence(unit.timeMs, period, weights.periodSharpness);
        if (unit.eventPeriod) terms.eventPeriod[i] = weights.eventPeriodBoost * periodCoincidence(unit.eventPeriod, period, weights.eventPeriodSharpness);
      }
      if (unit.isQuestion) terms.questionTurn[i] = -weights.questionTurnPenalty;
      if (queried) terms.disclosure[i] = disclosureCue(unit.speaker === queried, unit.firstPerson, aboutPerson, weights);
      terms.importance[i] = importanceMultiplier(unit.importance, weights.importanceWeight);
      terms.decay[i] = decayMultiplier(this.newestTime - unit.timeMs, weights.decayHalfLifeDays, weights.decayWeight);
    }
    return terms;
  }

  /**
   * The slot layout of the units, rebuilt after a change other than an append (removes and
   * re-embeddings are rare next to searches); an append extends it (see `extendLayout`).
   */
  private currentLayout(): SlotLayout {
    if (this.layout !== null) return this.layout;
    const layout = emptyLayout(this.links.size);
    for (const { unit } of this.links.values()) placeUnit(layout, unit);
    for (let slot = 0; slot < layout.units.length; slot++) this.linkSlot(layout, slot);
    for (let slot = 0; slot < layout.units.length; slot++) setCatchUp(layout, slot);
    this.layout = layout;
    return layout;
  }

  /**
   * The layout after an append: the new units take the next slots (where a rebuild would put
   * them: the end of `links`), and only the units of the sessions the append touched are linked
   * again, so a write into a user of a million units costs what it writes, not the million. A new
   * object, so that a search prepared before the append sees its layout changed (see `rank`).
   */
  private extendLayout(layout: SlotLayout, added: readonly CorpusUnit[], sessions: ReadonlySet<string>): SlotLayout {
    const next: SlotLayout = { ...layout };
    const first = next.units.length;
    grow(next, first + added.length);
    for (const unit of added) placeUnit(next, unit);
    const relinked: number[] = [];
    for (let slot = first; slot < next.units.length; slot++) if (next.units[slot].sessionId === null) relinked.push(slot);
    for (const sessionId of sessions) for (const unit of this.sessions.get(sessionId) ?? []) relinked.push(next.slotOfSeq.get(unit.seq)!);
    for (const slot of relinked) this.linkSlot(next, slot);
    for (const slot of relinked) setCatchUp(next, slot);
    return next;
  }

  /** A slot's neighbours, previous-unit dot and slab row, from `links`. */
  private linkSlot(layout: SlotLayout, slot: number): void {
    const link = this.links.get(layout.units[slot].seq)!;
    layout.row[slot] = link.row;
    const slotOf = (unit: CorpusUnit | null): number => (unit === null ? -1 : (layout.slotOfSeq.get(unit.seq) ?? -1));
    layout.previous[slot] = slotOf(link.previous);
    layout.next[slot] = slotOf(link.next);
    layout.previousTurn[slot] = slotOf(link.previousTurn);
    layout.nextTurn[slot] = slotOf(link.nextTurn);
    layout.selfDotPrevious[slot] = link.selfDotPrevious ?? Number.NaN;
  }

  /**
   * Whether a search may take its candidates from the graph (plus the units not in it yet): not
   * while most units are missing from it (a rebuild), which scoring them all handles faster.
   */
  private get graphSearchable(): boolean {
    return this.vectorIndex !== null && this.unindexed.size * 2 <= this.links.size;
  }

  /**
   * Small users are scored exhaustively; larger ones once their HNSW index can give the
   * candidates. A filter matching no more units than a small user has is scored exhaustively
   * among them, whatever the size of the user: cheaper than the graph, and every match counts.
   */
  private scoredExhaustively(weights: RetrievalWeights, matching: Int32Array | null = null): boolean {
    return (matching ? matching.length : this.links.size) <= weights.exhaustiveLimit || !this.graphSearchable;
  }

  /** Every (matching) slot for users scored exhaustively; else the slots of the BM25 and HNSW candidates that match. */
  private candidateSlots(query: CorpusQuery<QueryText>, vectors: readonly Float32Array[], weights: RetrievalWeights, layout: SlotLayout): Int32Array {
    const matching = query.filter ? matchingSlots(layout, query.filter) : null;
    if (this.scoredExhaustively(weights, matching)) return matching ?? everySlot(layout);
    return this.candidates(query, vectors, weights, layout);
  }

  /**
   * The candidates of a user not scored exhaustively (`candidateSlots` decides), as slots: the
   * best BM25 and HNSW candidates plus their session neighbours.
   */
  private candidates(query: CorpusQuery<QueryText>, vectors: readonly Float32Array[], weights: RetrievalWeights, layout: SlotLayout): Int32Array {
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
    for (const seq of this.unindexed) if (!passes || passes(seq)) choose(seq);
    [query.main, ...query.options].forEach((text, t) => {
      for (const { key } of this.lexical.topKeys(text.terms, weights.candidatePool, passes)) choose(key);
      for (const hit of this.vectorIndex!.search(vectors[t], weights.candidatePool, passes)) choose(hit.label);
    });
    const out = new Set(chosen);
    for (const slot of chosen) {
      for (const neighbour of [layout.previous[slot], layout.next[slot], layout.previousTurn[slot], layout.nextTurn[slot]]) if (passesSlot(neighbour)) out.add(neighbour);
    }
    return Int32Array.from(out);
  }

  /** A text's lexical half of the base score per candidate: (1 − denseWeight) · norm(bm25). */
  private lexicalShares(text: QueryText, candidates: Int32Array, position: (slot: number) => number, weights: RetrievalWeights, layout: SlotLayout): Float64Array {
    let lexical: Float64Array = new Float64Array(candidates.length);
    if (weights.denseWeight < 1 && candidates.length * SPARSE_SHARE < layout.units.length) {
      // A few candidates among many units (a large user): each candidate's own terms, never the
      // posting lists (the same sums, see `scoreKeys`).
      const seqs = new Float64Array(candidates.length);
      for (let i = 0; i < candidates.length; i++) seqs[i] = layout.units[candidates[i]].seq;
      lexical = this.lexical.scoreKeys(text.terms, seqs);
    } else if (weights.denseWeight < 1) {
      this.lexical.forEachScore(text.terms, (seq, termScore) => {
        const slot = layout.slotOfSeq.get(seq);
        const i = slot === undefined ? -1 : position(slot);
        if (i >= 0) lexical[i] += termScore;
      });
    }
    const lexicalNorm = minMaxNormalize(lexical);
    for (let i = 0; i < lexical.length; i++) lexical[i] = (1 - weights.denseWeight) * lexicalNorm[i];
    return lexical;
  }

  /** A text's dense half of the base score per candidate: denseWeight · norm(dense). */
  private denseShares(vector: Float32Array, candidates: Int32Array, position: (slot: number) => number, weights: RetrievalWeights, layout: SlotLayout): Float64Array {
    const count = candidates.length;
    const dense = new Float64Array(count);
    if (weights.denseWeight > 0) {
      // q·v per slot, computed once: a unit's own and as its next unit's previous. Scored
      // exhaustively, every slot is a candidate: all of them at once, two vectors per pass. Every
      // unit has its vector here: the dense half is off while any waits for one (usableWeights).
      let dotOf: (slot: number) => number;
      if (count * SPARSE_SHARE < layout.units.length) {
        // A few candidates among many units: their dots by position, two at a time, and those of
        // previous units outside them by slot; never an array of every unit's.
        const own = new Float64Array(count);
        this.queryDots(vector, candidates, layout, own);
        const others = new Map<number, number>();
        dotOf = (slot) => {
          const at = position(slot);
          if (at >= 0) return own[at];
          let value = others.get(slot);
          if (value === undefined) others.set(slot, (value = this.queryDot(vector, slot, layout)));
          return value;
        };
      } else {
        const queryDot = new Float64Array(layout.units.length);
        if (count === layout.units.length) this.queryDots(vector, null, layout, queryDot);
        else queryDot.fill(Number.NaN);
        dotOf = (slot) => {
          let value = queryDot[slot];
          if (Number.isNaN(value)) queryDot[slot] = value = this.queryDot(vector, slot, layout);
          return value;
        };
      }
      for (let i = 0; i < count; i++) {
        const slot = candidates[i];
        const previous = layout.previous[slot];
        const selfDotPrevious = layout.selfDotPrevious[slot];
        dense[i] = contextCosine(
          dotOf(slot),
          previous >= 0 ? dotOf(previous) : undefined,
          Number.isNaN(selfDotPrevious) ? undefined : selfDotPrevious,
          weights.contextWeight,
        );
      }
    }
    const denseNorm = minMaxNormalize(dense);
    for (let i = 0; i < count; i++) dense[i] = weights.denseWeight * denseNorm[i];
    return dense;
  }

  /** q·v for the units of `slots` (null: every slot) into `out`, from the floats or the int8 codes. */
  private queryDots(query: Float32Array, slots: Int32Array | null, layout: SlotLayout, out: Float64Array): void {
    if (!this.slab) return dotsInto(query, slots, layout.units, out);
    const count = slots ? slots.length : layout.units.length;
    const rows = slots ? new Int32Array(count) : layout.row.subarray(0, count);
    if (slots) for (let k = 0; k < count; k++) rows[k] = layout.row[slots[k]];
    this.slab.dotsInto(query, rows, out);
  }

  /** q·v for one slot's unit (every unit has its vector when the dense half is on: `usableWeights`). */
  private queryDot(query: Float32Array, slot: number, layout: SlotLayout): number {
    return this.slab ? this.slab.dot(query, layout.row[slot]) : dot(query, layout.units[slot].vector!);
  }

  /** v·p of two units' vectors; undefined while either waits for its vector. */
  private dotOfUnits(a: CorpusUnit, b: CorpusUnit): number | undefined {
    if (!this.slab) return a.vector && b.vector ? dot(a.vector, b.vector) : undefined;
    const rowA = this.links.get(a.seq)?.row ?? -1;
    const rowB = this.links.get(b.seq)?.row ?? -1;
    return rowA >= 0 && rowB >= 0 ? this.slab.dotRows(rowA, rowB) : undefined;
  }

  private relink(sessionId: string): void {
    const session = this.sessions.get(sessionId);
    if (!session) return;
    session.sort((a, b) => a.timeMs - b.timeMs || a.seq - b.seq);
    let previousTurn: CorpusUnit | null = null;
    for (let i = 0; i < session.length; i++) {
      const link = this.links.get(session[i].seq);
      if (!link) continue;
      const previous = i > 0 ? session[i - 1] : null;
      const next = i + 1 < session.length ? session[i + 1] : null;
      if (link.previous !== previous) link.selfDotPrevious = previous ? this.dotOfUnits(link.unit, previous) : undefined;
      link.previous = previous;
      link.next = next;
      if (previous && !sameMessage(previous, link.unit)) previousTurn = previous;
      link.previousTurn = previousTurn;
    }
    let nextTurn: CorpusUnit | null = null;
    for (let i = session.length - 1; i >= 0; i--) {
      const link = this.links.get(session[i].seq);
      if (!link) continue;
      const next = i + 1 < session.length ? session[i + 1] : null;
      if (next && !sameMessage(next, link.unit)) nextTurn = next;
      link.nextTurn = nextTurn;
    }
  }
}

/**
 * Candidates fewer than 1 / SPARSE_SHARE of the units are scored through lookups by slot rather than
 * arrays over every unit: the same numbers, at a cost that follows the candidates, not the user.
 */
const SPARSE_SHARE = 8;

function sameMessage(a: CorpusUnit, b: CorpusUnit): boolean {
  return a.messageKey !== null && a.messageKey === b.messageKey;
}

/** A layout with room for `capacity` units and none placed. */
function emptyLayout(capacity: number): SlotLayout {
  const layout: SlotLayout = {
    units: [],
    slotOfSeq: new Map(),
    previous: new Int32Array(0),
    next: new Int32Array(0),
    previousTurn: new Int32Array(0),
    nextTurn: new Int32Array(0),
    selfDotPrevious: new Float64Array(0),
    message: new Int32Array(0),
    messageCount: 0,
    catchUpTurn: new Uint8Array(0),
    text: new Int32Array(0),
    row: new Int32Array(0),
    textCount: 0,
    messageIds: new Map(),
    textIds: new Map(),
  };
  grow(layout, capacity);
  return layout;
}

/**
 * Room for `wanted` slots: the columns are longer than the units (by half again when they grow,
 * so appends copy them rarely); every reader goes by `units.length`.
 */
function grow(layout: SlotLayout, wanted: number): void {
  if (layout.previous.length >= wanted) return;
  const capacity = Math.max(wanted, Math.ceil(layout.previous.length * 1.5));
  const widened = <T extends Int32Array | Float64Array | Uint8Array>(column: T, make: (n: number) => T): T => {
    const out = make(capacity);
    out.set(column);
    return out;
  };
  layout.previous = widened(layout.previous, (n) => new Int32Array(n));
  layout.next = widened(layout.next, (n) => new Int32Array(n));
  layout.previousTurn = widened(layout.previousTurn, (n) => new Int32Array(n));
  layout.nextTurn = widened(layout.nextTurn, (n) => new Int32Array(n));
  layout.selfDotPrevious = widened(layout.selfDotPrevious, (n) => new Float64Array(n));
  layout.message = widened(layout.message, (n) => new Int32Array(n));
  layout.catchUpTurn = widened(layout.catchUpTurn, (n) => new Uint8Array(n));
  layout.text = widened(layout.text, (n) => new Int32Array(n));
  layout.row = widened(layout.row, (n) => new Int32Array(n));
}

/** Gives a unit the next slot, with its message and text ids (a key seen before keeps its id). */
function placeUnit(layout: SlotLayout, unit: CorpusUnit): void {
  const slot = layout.units.length;
  layout.slotOfSeq.set(unit.seq, slot);
  layout.units.push(unit);
  const key = unit.messageKey;
  if (key === null) {
    layout.message[slot] = -1;
  } else {
    let id = layout.messageIds.get(key);
    if (id === undefined) layout.messageIds.set(key, (id = layout.messageIds.size));
    layout.message[slot] = id;
  }
  let textId = layout.textIds.get(unit.textKey);
  if (textId === undefined) layout.textIds.set(unit.textKey, (textId = layout.textIds.size));
  layout.text[slot] = textId;
  layout.messageCount = layout.messageIds.size;
  layout.textCount = layout.textIds.size;
}

/** 1 for a unit of the first two turns of its session (see `timeCue`); its own and its previous turn's links must be set. */
function setCatchUp(layout: SlotLayout, slot: number): void {
  const before = layout.previousTurn[slot];
  layout.catchUpTurn[slot] = layout.units[slot].sessionId !== null && (before < 0 || layout.previousTurn[before] < 0) ? 1 : 0;
}

/** The slots of the units passing a filter, in slot order. */
function matchingSlots(layout: SlotLayout, filter: (unit: CorpusUnit) => boolean): Int32Array {
  const slots = new Int32Array(layout.units.length);
  let count = 0;
  for (let slot = 0; slot < layout.units.length; slot++) if (filter(layout.units[slot])) slots[count++] = slot;
  return slots.subarray(0, count);
}

/** Slots 0..n-1: the candidates of a user scored exhaustively. */
function everySlot(layout: SlotLayout): Int32Array {
  const slots = new Int32Array(layout.units.length);
  for (let slot = 0; slot < slots.length; slot++) slots[slot] = slot;
  return slots;
}

/**
 * q·v for every unit (or the units of `slots`; each with its vector) into `out`, two units per pass over q: each sum still adds its products in
 * order (the bits of `dot`), and the two independent sums keep the core busier than one.
 */
function dotsInto(query: Float32Array, slots: Int32Array | null, units: readonly CorpusUnit[], out: Float64Array): void {
  const count = slots ? slots.length : units.length;
  const unitAt = (k: number): CorpusUnit => units[slots ? slots[k] : k];
  let k = 0;
  for (; k + 1 < count; k += 2) {
    const a = unitAt(k).vector!;
    const b = unitAt(k + 1).vector!;
    const n = Math.min(query.length, a.length, b.length);
    if (a.length !== n || b.length !== n) break;
    let sumA = 0;
    let sumB = 0;
    let i = 0;
    for (; i + 1 < n; i += 2) {
      const x = query[i];
      const y = query[i + 1];
      sumA += x * a[i];
      sumB += x * b[i];
      sumA += y * a[i + 1];
      sumB += y * b[i + 1];
    }
    if (i < n) {
      sumA += query[i] * a[i];
      sumB += query[i] * b[i];
    }
    out[k] = sumA;
    out[k + 1] = sumB;
  }
  for (; k < count; k++) out[k] = dot(query, unitAt(k).vector!);
}

/**
 * Unrolled by four with one accumulator: the same additions in the same order as a plain loop
 * (so the same bits), in about half the time; scoring a 700-unit user is mostly these.
 */
function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  const n = Math.min(a.length, b.length);
  const unrolled = n - (n % 4);
  let i = 0;
  for (; i < unrolled; i += 4) {
    sum += a[i] * b[i];
    sum += a[i + 1] * b[i + 1];
    sum += a[i + 2] * b[i + 2];
    sum += a[i + 3] * b[i + 3];
  }
  for (; i < n; i++) sum += a[i] * b[i];
  return sum;
}
