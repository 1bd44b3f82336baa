import { Bm25Index } from './bm25-index.js';
import {
  compareRanked,
  contextCosine,
  decayMultiplier,
  importanceMultiplier,
  fuseScore,
  minMaxNormalize,
  tagBoost,
  withNeighbours,
  type FusedParts,
  type ScoreExplanation,
  type ScoreTerm,
} from './fuse-scores.js';
import type { RetrievalWeights } from './retrieval-config.js';
import { periodsOverlap, type TimePeriod } from './time-cues.js';
import { VectorIndex } from './vector-index.js';

/** What retrieval knows of one stored unit. */
export interface CorpusUnit {
  seq: number;
  vector: Float32Array;
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
}

/** A query made ready for scoring: its terms and its vector. */
export interface PreparedText {
  terms: readonly string[];
  vector: Float32Array;
}

export interface CorpusQuery {
  main: PreparedText;
  /** Extra queries (multiple-choice answers) fused into the main one. */
  options: readonly PreparedText[];
  /** Lowercased speaker the query names, if exactly one known speaker. */
  speaker: string | null;
  /** Lowercased generic role (user, assistant) the query is about, if any. */
  role?: string | null;
  /** Lowercased tags whose exact presence on a unit is rewarded. */
  wantedTags: ReadonlySet<string>;
  whenQuestion: boolean;
  period: TimePeriod | null;
  /** Keeps only units passing it (a tag filter), applied before the cut. */
  filter?: (seq: number) => boolean;
  /** Return each unit's score broken into its terms (costs nothing when off). */
  explain?: boolean;
}

export interface RankedUnit {
  seq: number;
  score: number;
  explanation?: ScoreExplanation;
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

  /** Units whose vectors the HNSW index does not hold yet (a rebuild in progress). */
  private readonly unindexed = new Set<number>();

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
   * marked deleted, and units it lacks wait in `unindexed` for `indexPending`.
   */
  attachVectorIndex(index: VectorIndex): void {
    for (const label of index.labels()) if (!this.links.has(label)) index.markDeletedOnLoad(label);
    for (const seq of this.links.keys()) if (!index.has(seq)) this.unindexed.add(seq);
    this.vectorIndex = index;
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

  vectorOf(seq: number): Float32Array | undefined {
    return this.links.get(seq)?.unit.vector;
  }

  /**
   * Adds units, searchable at once. Their vectors enter the HNSW index now if one is attached
   * and complete, else later through `indexPending`.
   */
  add(units: readonly CorpusUnit[]): void {
    const touchedSessions = new Set<string>();
    for (const unit of units) {
      if (this.links.has(unit.seq)) this.remove(unit.seq);
      this.links.set(unit.seq, { unit, previous: null, next: null, previousTurn: null, nextTurn: null, selfDotPrevious: undefined });
      this.lexical.add(unit.seq, unit.terms);
      if (this.vectorIndex && !this.vectorIndex.has(unit.seq)) {
        if (this.unindexed.size > 0) this.unindexed.add(unit.seq);
        else this.vectorIndex.add(unit.seq, unit.vector);
      }
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
  }

  /** Lets the HNSW index go (its file stays current on disk); search stays exhaustive. */
  detachVectorIndex(): void {
    this.vectorIndex = null;
    this.unindexed.clear();
  }

  /** Moves up to `count` deferred vectors into the HNSW index; returns how many remain. */
  indexPending(count: number): number {
    for (const seq of this.unindexed) {
      if (count-- <= 0) break;
      const link = this.links.get(seq);
      if (link && this.vectorIndex) this.vectorIndex.add(seq, link.unit.vector);
      this.unindexed.delete(seq);
    }
    return this.unindexed.size;
  }

  remove(seq: number): void {
    const link = this.links.get(seq);
    if (!link) return;
    const { unit } = link;
    this.links.delete(seq);
    this.lexical.remove(seq);
    this.vectorIndex?.remove(seq);
    this.unindexed.delete(seq);
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

  /** Ranks the user's units for a query; sorted before the cut, ties broken by newer first. */
  search(query: CorpusQuery, weights: RetrievalWeights, limit: number): RankedUnit[] {
    if (this.links.size === 0 || limit <= 0) return [];
    const candidates = this.candidates(query, weights);
    const { dense: denseShare, lexical: lexicalShare } = this.baseShares(query.main, candidates, weights);
    const optionShare = new Float64Array(candidates.length);
    if (query.options.length > 0 && weights.optionWeight > 0) {
      for (const option of query.options) {
        const shares = this.baseShares(option, candidates, weights);
        for (let i = 0; i < optionShare.length; i++) optionShare[i] = Math.max(optionShare[i], shares.dense[i] + shares.lexical[i]);
      }
      for (let i = 0; i < optionShare.length; i++) optionShare[i] *= weights.optionWeight;
    }
    // The base score (what neighbours share) is the first three terms, summed as fuseScore sums them.
    const base = new Float64Array(candidates.length);
    for (let i = 0; i < base.length; i++) base[i] = denseShare[i] + lexicalShare[i] + optionShare[i];
    const baseBySeq = new Map<number, number>();
    candidates.forEach((link, i) => baseBySeq.set(link.unit.seq, base[i]));

    const ranked: Array<RankedUnit & { messageKey: string | null }> = [];
    for (let i = 0; i < candidates.length; i++) {
      const { unit, previousTurn, nextTurn } = candidates[i];
      if (query.filter && !query.filter(unit.seq)) continue;
      const parts: FusedParts = {
        dense: denseShare[i],
        bm25: lexicalShare[i],
        options: optionShare[i],
        neighbours: withNeighbours(
          0,
          previousTurn ? baseBySeq.get(previousTurn.seq) : undefined,
          nextTurn ? baseBySeq.get(nextTurn.seq) : undefined,
          weights.neighbourWeight,
        ),
        speaker: query.speaker !== null && unit.speaker === query.speaker ? weights.speakerBoost : 0,
        role: query.role && unit.speaker === query.role ? weights.roleBoost : 0,
        tags: tagBoost(unit.tags, query.wantedTags, weights.tagBoost),
        timeCue: query.whenQuestion && unit.hasTimeExpression ? weights.timeCueBoost : 0,
        period: query.period && unit.timeMs >= query.period.startMs && unit.timeMs < query.period.endMs ? weights.periodBoost : 0,
        eventPeriod: query.period && unit.eventPeriod && periodsOverlap(unit.eventPeriod, query.period) ? weights.eventPeriodBoost : 0,
        questionTurn: unit.isQuestion ? -weights.questionTurnPenalty : 0,
        importance: importanceMultiplier(unit.importance, weights.importanceWeight),
        decay: decayMultiplier(this.newestTime - unit.timeMs, weights.decayHalfLifeDays, weights.decayWeight),
      };
      const terms: ScoreTerm[] | undefined = query.explain ? [] : undefined;
      const score = fuseScore(parts, terms);
      ranked.push({ seq: unit.seq, score, messageKey: unit.messageKey, ...(terms ? { explanation: { score, terms } } : {}) });
    }
    ranked.sort(compareRanked);
    return bestPartPerMessage(ranked, limit);
  }

  /**
   * Small users are scored exhaustively (exact, and under a millisecond at a few thousand
   * units). Larger ones take the best BM25 and HNSW candidates plus their session neighbours.
   */
  private candidates(query: CorpusQuery, weights: RetrievalWeights): UnitLinks[] {
    if (this.links.size <= weights.exhaustiveLimit || !this.vectorIndexComplete) return [...this.links.values()];
    const chosen = new Set<number>();
    for (const text of [query.main, ...query.options]) {
      const lexical = [...this.lexical.score(text.terms)].sort((a, b) => b[1] - a[1]);
      for (const [seq] of lexical.slice(0, weights.candidatePool)) chosen.add(seq);
      for (const hit of this.vectorIndex!.search(text.vector, weights.candidatePool)) chosen.add(hit.label);
    }
    const withNeighbourSeqs = new Set(chosen);
    for (const seq of chosen) {
      const link = this.links.get(seq);
      for (const neighbour of [link?.previous, link?.next, link?.previousTurn, link?.nextTurn]) if (neighbour) withNeighbourSeqs.add(neighbour.seq);
    }
    const out: UnitLinks[] = [];
    for (const seq of withNeighbourSeqs) {
      const link = this.links.get(seq);
      if (link) out.push(link);
    }
    return out;
  }

  /** The two weighted halves of a text's base score per candidate: denseWeight · norm(dense) and (1 − denseWeight) · norm(bm25). */
  private baseShares(text: PreparedText, candidates: readonly UnitLinks[], weights: RetrievalWeights): { dense: Float64Array; lexical: Float64Array } {
    const lexicalBySeq = weights.denseWeight < 1 ? this.lexical.score(text.terms) : new Map<number, number>();
    const lexical = new Float64Array(candidates.length);
    const dense = new Float64Array(candidates.length);
    const dotCache = new Map<number, number>();
    const queryDot = (unit: CorpusUnit): number => {
      let value = dotCache.get(unit.seq);
      if (value === undefined) dotCache.set(unit.seq, (value = dot(text.vector, unit.vector)));
      return value;
    };
    for (let i = 0; i < candidates.length; i++) {
      const { unit, previous, selfDotPrevious } = candidates[i];
      lexical[i] = lexicalBySeq.get(unit.seq) ?? 0;
      if (weights.denseWeight > 0) {
        dense[i] = contextCosine(queryDot(unit), previous ? queryDot(previous) : undefined, selfDotPrevious, weights.contextWeight);
      }
    }
    const lexicalNorm = minMaxNormalize(lexical);
    const denseNorm = minMaxNormalize(dense);
    for (let i = 0; i < candidates.length; i++) {
      dense[i] = weights.denseWeight * denseNorm[i];
      lexical[i] = (1 - weights.denseWeight) * lexicalNorm[i];
    }
    return { dense, lexical };
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
      if (link.previous !== previous) link.selfDotPrevious = previous ? dot(link.unit.vector, previous.vector) : undefined;
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

function sameMessage(a: CorpusUnit, b: CorpusUnit): boolean {
  return a.messageKey !== null && a.messageKey === b.messageKey;
}

/**
 * Keeps the best-ranked part of each message: the parts of one long message would otherwise
 * crowd the top of the list with one turn, and a result stands for the turn it comes from.
 */
function bestPartPerMessage(ranked: ReadonlyArray<RankedUnit & { messageKey: string | null }>, limit: number): RankedUnit[] {
  const seen = new Set<string>();
  const out: RankedUnit[] = [];
  for (const { seq, score, messageKey, explanation } of ranked) {
    if (out.length >= limit) break;
    if (messageKey !== null) {
      if (seen.has(messageKey)) continue;
      seen.add(messageKey);
    }
    out.push(explanation ? { seq, score, explanation } : { seq, score });
  }
  return out;
}

function dot(a: Float32Array, b: Float32Array): number {
  let sum = 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) sum += a[i] * b[i];
  return sum;
}
