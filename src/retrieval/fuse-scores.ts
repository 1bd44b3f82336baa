/**
 * The terms of the fused search score, each a pure function of plain numbers so that a unit
 * test can pin it. How they combine (`fuseScore` below; `user-corpus.ts` feeds it):
 *
 *   base(u)  = denseWeight · norm(dense(u)) + (1 − denseWeight) · norm(bm25(u))
 *              + optionWeight · max over options of the same base for the option's text
 *   score(u) = ( base(u) + neighbourWeight · max(base(prev), base(next))
 *                + speaker, tag, time-cue (with catch-up), period and event-period boosts − question-turn penalty
 *                + disclosure cue: the queried speaker's first-person turns )
 *
 * The period and event-period boosts are weighted by how exactly the periods coincide
 * (`periodCoincidence`): an exact day counts fully, a shared month or year for little.
 *              · importanceMultiplier · decayMultiplier
 *
 * dense(u) is the cosine between the query and the unit's vector blended with its previous
 * turn's (`contextCosine`); norm is min-max over the candidates, which keeps BM25's unbounded
 * scale from swamping the cosine (reciprocal rank fusion gave the weak dense list too much say).
 * `fuseScore` can also list the terms it applied: that list is a search hit's score explanation.
 */

import type { RetrievalWeights } from './retrieval-config.js';

const DAY_MS = 86_400_000;

/**
 * Min-max normalisation to [0, 1]. A list with no spread cannot rank anything: all-positive
 * values (a single match, or equal ones) map to 1, so a lone hit does not score 0; zeros stay 0.
 */
export function minMaxNormalize(values: ArrayLike<number>): Float64Array {
  const out = new Float64Array(values.length);
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < values.length; i++) {
    if (values[i] < min) min = values[i];
    if (values[i] > max) max = values[i];
  }
  const spread = max - min;
  if (!(spread > 0)) {
    if (max > 0) out.fill(1);
    return out;
  }
  for (let i = 0; i < values.length; i++) out[i] = (values[i] - min) / spread;
  return out;
}

/**
 * Cosine between the query q and the normalised sum v + α·p of a unit's vector v and its
 * previous turn's p, from the dot products alone: (q·v + α q·p) / |v + α p|, with
 * |v + α p|² = 1 + α² + 2α v·p for unit vectors. α = 0 (or no previous turn) gives q·v.
 */
export function contextCosine(queryDotSelf: number, queryDotPrevious: number | undefined, selfDotPrevious: number | undefined, alpha: number): number {
  if (alpha === 0 || queryDotPrevious === undefined || selfDotPrevious === undefined) return queryDotSelf;
  const norm = Math.sqrt(Math.max(1e-12, 1 + alpha * alpha + 2 * alpha * selfDotPrevious));
  return (queryDotSelf + alpha * queryDotPrevious) / norm;
}

/** Adds a share of the better neighbour's base score: the question's words often sit in the turn next to the answer. */
export function withNeighbours(base: number, previous: number | undefined, next: number | undefined, weight: number): number {
  const better = Math.max(previous ?? 0, next ?? 0);
  return base + weight * better;
}

/** A bounded multiplier around 1 (importance 0.5 is neutral): importance reorders, it never filters. */
export function importanceMultiplier(importance: number, weight: number): number {
  const clamped = Math.min(1, Math.max(0, Number.isFinite(importance) ? importance : 0.5));
  return 1 + weight * (clamped - 0.5);
}

/**
 * Exponential decay with the given half-life, applied to a share `weight` of the score. Age is
 * measured from the user's newest memory, so a years-old benchmark conversation is not
 * flattened by today's date.
 */
export function decayMultiplier(ageMs: number, halfLifeDays: number, weight: number): number {
  if (weight === 0 || halfLifeDays <= 0) return 1;
  const ageDays = Math.max(0, ageMs) / DAY_MS;
  return 1 - weight + weight * Math.pow(0.5, ageDays / halfLifeDays);
}

/**
 * A "when" question favours turns that say when: any time expression, and more so one told in the
 * first turns of a session, where people catch up on what happened since they last talked ("Last
 * week I had a crazy game!"). On the LoCoMo dev split 40% of temporal evidence sits in the first
 * two turns of a session, against 9% of all turns.
 */
export function timeCue(whenQuestion: boolean, hasTimeExpression: boolean, catchUpTurn: boolean, weights: Pick<RetrievalWeights, 'timeCueBoost' | 'catchUpBoost'>): number {
  if (!whenQuestion || !hasTimeExpression) return 0;
  return catchUpTurn ? weights.timeCueBoost + weights.catchUpBoost : weights.timeCueBoost;
}

/**
 * A turn in which the person the query is about speaks of themself ("I", "my", "we"): 88-90% of
 * multi-hop and open-domain evidence turns, against 58% of all turns. More for a query about the
 * person (an inference or a list, `asksAboutPerson`) than about one event.
 */
export function disclosureCue(byQueriedPerson: boolean, firstPerson: boolean, aboutPerson: boolean, weights: Pick<RetrievalWeights, 'disclosureBoost' | 'aboutPersonBoost'>): number {
  if (!byQueriedPerson || !firstPerson) return 0;
  return aboutPerson ? weights.disclosureBoost + weights.aboutPersonBoost : weights.disclosureBoost;
}

/** A half-open time range [startMs, endMs) in Unix milliseconds (as `time-cues.ts` resolves them). */
export interface Span {
  startMs: number;
  endMs: number;
}

/**
 * How much a coincidence of periods says, by the wider one's length: (1 day / length)^sharpness,
 * 1 for a day or less. A question's day against a day-long event is near-certain evidence; a
 * shared month or year is true of many turns that are not the answer. Sharpness 0 weighs every
 * length alike (the flat boost this replaces).
 */
export function periodSpecificity(lengthMs: number, sharpness: number): number {
  if (sharpness === 0) return 1;
  return Math.pow(DAY_MS / Math.max(DAY_MS, lengthMs), sharpness);
}

/**
 * How exactly two periods coincide, in [0, 1]: the share of the narrower one inside the other,
 * times the specificity of the wider. 0 when they share no instant. 8 May against "yesterday"
 * said on 9 May is 1; May against that day is (1/31)^sharpness; 8 May against "last year" less still.
 */
export function periodCoincidence(a: Span, b: Span, sharpness: number): number {
  const overlap = Math.min(a.endMs, b.endMs) - Math.max(a.startMs, b.startMs);
  if (!(overlap > 0)) return 0;
  const lengthA = a.endMs - a.startMs;
  const lengthB = b.endMs - b.startMs;
  return (overlap / Math.min(lengthA, lengthB)) * periodSpecificity(Math.max(lengthA, lengthB), sharpness);
}

/** A unit's own time against a period: inside it, the period's specificity; else 0. */
export function instantCoincidence(timeMs: number, period: Span, sharpness: number): number {
  if (!(timeMs >= period.startMs && timeMs < period.endMs)) return 0;
  return periodSpecificity(period.endMs - period.startMs, sharpness);
}

/** Number of wanted tags (lowercase) the unit carries exactly, times the boost. */
export function tagBoost(unitTags: readonly string[], wantedTags: ReadonlySet<string>, boost: number): number {
  if (wantedTags.size === 0 || unitTags.length === 0) return 0;
  let hits = 0;
  for (const tag of unitTags) if (wantedTags.has(tag.toLowerCase())) hits++;
  return hits * boost;
}

/** One term of a fused score: added to the running score, or multiplying it. */
export interface ScoreTerm {
  term: FusedPartName;
  kind: 'add' | 'multiply';
  value: number;
}

/** A score broken into its terms: applying them in order, from 0, gives `score`. */
export interface ScoreExplanation {
  score: number;
  terms: ScoreTerm[];
}

/**
 * Every term of one unit's fused score, already weighted: the added ones in the order they are
 * summed, then the two multipliers. `dense` is denseWeight · norm(dense), `bm25` is
 * (1 − denseWeight) · norm(bm25), `options` the option share, `neighbours` the neighbour share.
 */
export interface FusedParts {
  dense: number;
  bm25: number;
  options: number;
  neighbours: number;
  speaker: number;
  role: number;
  tags: number;
  timeCue: number;
  period: number;
  eventPeriod: number;
  questionTurn: number;
  disclosure: number;
  importance: number;
  decay: number;
}

const ADDED_PARTS = ['dense', 'bm25', 'options', 'neighbours', 'speaker', 'role', 'tags', 'timeCue', 'period', 'eventPeriod', 'questionTurn', 'disclosure'] as const;
const MULTIPLIED_PARTS = ['importance', 'decay'] as const;
export type FusedPartName = (typeof ADDED_PARTS)[number] | (typeof MULTIPLIED_PARTS)[number];

/**
 * The fused score of one unit: the added parts summed in order, then multiplied by importance and
 * decay. When `terms` is given, each part that changes the score is appended to it, so the
 * explanation is this very computation and cannot drift from it (`applyTerms` replays it exactly).
 */
export function fuseScore(parts: Readonly<FusedParts>, terms?: ScoreTerm[]): number {
  let score = 0;
  for (const term of ADDED_PARTS) {
    const value = parts[term];
    score += value;
    if (terms && value !== 0) terms.push({ term, kind: 'add', value });
  }
  for (const term of MULTIPLIED_PARTS) {
    const value = parts[term];
    score *= value;
    if (terms && value !== 1) terms.push({ term, kind: 'multiply', value });
  }
  return score;
}

/** Every part of many units' fused scores, one array per part, all indexed alike. */
export type FusedColumns = { readonly [K in FusedPartName]: ArrayLike<number> };

/**
 * `fuseScore` of unit `i`, its parts read from columns: the same additions and multiplications
 * in the same order, hence the same bits, without filling a parts object per unit.
 */
export function fuseColumnsAt(columns: FusedColumns, i: number): number {
  let score = 0;
  score += columns.dense[i];
  score += columns.bm25[i];
  score += columns.options[i];
  score += columns.neighbours[i];
  score += columns.speaker[i];
  score += columns.role[i];
  score += columns.tags[i];
  score += columns.timeCue[i];
  score += columns.period[i];
  score += columns.eventPeriod[i];
  score += columns.questionTurn[i];
  score += columns.disclosure[i];
  score *= columns.importance[i];
  score *= columns.decay[i];
  return score;
}

/** Unit `i`'s parts as `fuseScore` takes them (to explain a score). */
export function partsAt(columns: FusedColumns, i: number): FusedParts {
  const parts = {} as FusedParts;
  for (const term of ADDED_PARTS) parts[term] = columns[term][i];
  for (const term of MULTIPLIED_PARTS) parts[term] = columns[term][i];
  return parts;
}

/** Replays an explanation's terms from 0: equals the score they explain. */
export function applyTerms(terms: readonly ScoreTerm[]): number {
  let score = 0;
  for (const { kind, value } of terms) score = kind === 'add' ? score + value : score * value;
  return score;
}
