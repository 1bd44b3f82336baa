/**
 * The terms of the fused search score, each a pure function of plain numbers so that a unit
 * test can pin it. How they combine (`fuseScore` below; `corpus/` feeds it):
 *
 *   base(u)  = denseWeight · norm(dense(u)) + (1 − denseWeight) · norm(bm25(u))
 *              + optionWeight · max over options of the same base for the option's text
 *   score(u) = ( base(u) + neighbourWeight · max(base(prev), base(next))
 *                + speaker, tag, time-cue (with catch-up), period and event-period boosts − question-turn penalty
 *                + disclosure cue: the queried speaker's first-person turns
 *                + entity cue: the specificity of each queried entity the unit mentions )
 *              · importanceMultiplier · decayMultiplier
 *
 * The parts, in the order they apply, are one list: `FUSED_PARTS` (the end of this file).
 * The period and event-period boosts are weighted by how exactly the periods coincide
 * (`periodCoincidence`): an exact day counts fully, a shared month or year for little.
 *
 * dense(u) is the cosine between the query and the unit's vector blended with its previous
 * turn's (`contextCosine`); norm is min-max over the candidates, which keeps BM25's unbounded
 * scale from swamping the cosine (reciprocal rank fusion gave the weak dense list too much say).
 * `fuseScore` can also list the terms it applied: that list is a search hit's score explanation.
 */

import type { RetrievalWeights } from './retrieval-config.js';
import type { TimePeriod } from './time-cues/calendar.js';

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
export function periodCoincidence(a: TimePeriod, b: TimePeriod, sharpness: number): number {
  const overlap = Math.min(a.endMs, b.endMs) - Math.max(a.startMs, b.startMs);
  if (!(overlap > 0)) return 0;
  const lengthA = a.endMs - a.startMs;
  const lengthB = b.endMs - b.startMs;
  return (overlap / Math.min(lengthA, lengthB)) * periodSpecificity(Math.max(lengthA, lengthB), sharpness);
}

/** A unit's own time against a period: inside it, the period's specificity; else 0. */
export function instantCoincidence(timeMs: number, period: TimePeriod, sharpness: number): number {
  if (!(timeMs >= period.startMs && timeMs < period.endMs)) return 0;
  return periodSpecificity(period.endMs - period.startMs, sharpness);
}

/**
 * How specific an entity is among the user's units, in [0, 1]: log(N / units mentioning it) / log N,
 * an idf scaled so that a name one unit mentions is 1 and one every unit mentions is 0. A rare name
 * says far more about which turn answers than a speaker half the turns are by.
 */
export function entitySpecificity(mentioning: number, units: number): number {
  if (units <= 1 || mentioning <= 0) return 1;
  return Math.max(0, Math.min(1, Math.log(units / mentioning) / Math.log(units)));
}

/** The sum of the specificities (`entityWeights`, by entity key) of the query's entities the unit mentions, times the boost. */
export function entityCue(mentions: readonly { readonly key: string }[], entityWeights: ReadonlyMap<string, number>, boost: number): number {
  if (mentions.length === 0) return 0;
  let sum = 0;
  for (const { key } of mentions) sum += entityWeights.get(key) ?? 0;
  return sum * boost;
}

/** Number of wanted tags (lowercase) the unit carries exactly, times the boost. */
export function tagBoost(unitTags: readonly string[], wantedTags: ReadonlySet<string>, boost: number): number {
  if (wantedTags.size === 0 || unitTags.length === 0) return 0;
  let hits = 0;
  for (const tag of unitTags) if (wantedTags.has(tag.toLowerCase())) hits++;
  return hits * boost;
}

/** What the cues read of a unit (a `CorpusUnit` is one). */
export interface CueUnit {
  readonly speaker: string | null;
  readonly tags: readonly string[];
  readonly timeMs: number;
  readonly importance: number;
  readonly hasTimeExpression: boolean;
  readonly eventPeriod: TimePeriod | null;
  readonly isQuestion: boolean;
  readonly firstPerson: boolean;
  /** The entities the unit mentions (`CorpusUnit.entities`). */
  readonly entities: readonly { readonly key: string }[];
}

/** The query's cues as the parts read them, derived once per search (`cueQuery`). */
export interface CueQuery {
  readonly speaker: string | null;
  readonly role: string | null | undefined;
  readonly wantedTags: ReadonlySet<string>;
  readonly whenQuestion: boolean;
  readonly aboutPerson: boolean;
  readonly period: TimePeriod | null;
  /** Whose first-person turns the disclosure cue favours (the queried speaker, else role); null while its weights are 0. */
  readonly queried: string | null;
  /** Decay counts a unit's age from here: the user's newest unit. */
  readonly newestTimeMs: number;
  /** The query's known entities and their specificity (`entitySpecificity`); empty while `entityBoost` is 0. */
  readonly entityWeights: ReadonlyMap<string, number>;
}

/**
 * One part of the fused score. A part without `value` is computed by the rank from the query's
 * texts (the dense and lexical halves, the options, the neighbours); a part with one is a cue, a
 * function of one unit and the query's cues, which `corpus/cue-columns.ts` fills a column with.
 */
export interface FusedPart {
  readonly name: string;
  readonly kind: 'add' | 'multiply';
  /** Whether the query has the cue at all: when not, the part is neutral (adds 0, multiplies by 1) for every unit and is not computed. */
  readonly applies?: (query: CueQuery, weights: RetrievalWeights) => boolean;
  /** The cue's value for one unit; `catchUpTurn`: the unit is among the first two turns of its session. */
  readonly value?: (unit: CueUnit, catchUpTurn: boolean, query: CueQuery, weights: RetrievalWeights) => number;
}

/**
 * The fused score, part by part, in the order applied from 0: the score, its explanation and the
 * columns a search fills are all built from this list, so a new cue is one entry here (and its
 * weight in `RetrievalWeights`). The order is the order of the floating-point operations: moving
 * an entry changes scores in their last bits.
 */
export const FUSED_PARTS = [
  /** denseWeight · norm(dense): the query's cosine with the unit, blended with its previous turn's. */
  { name: 'dense', kind: 'add' },
  /** (1 − denseWeight) · norm(bm25). */
  { name: 'bm25', kind: 'add' },
  /** optionWeight · the best option's dense + lexical share. */
  { name: 'options', kind: 'add' },
  /** neighbourWeight · the better base score of the turn before and the turn after. */
  { name: 'neighbours', kind: 'add' },
  {
    name: 'speaker',
    kind: 'add',
    applies: (query) => query.speaker !== null,
    value: (unit, _catchUp, query, weights) => (unit.speaker === query.speaker ? weights.speakerBoost : 0),
  },
  {
    name: 'role',
    kind: 'add',
    applies: (query) => Boolean(query.role),
    value: (unit, _catchUp, query, weights) => (unit.speaker === query.role ? weights.roleBoost : 0),
  },
  {
    name: 'tags',
    kind: 'add',
    value: (unit, _catchUp, query, weights) => (unit.tags.length > 0 ? tagBoost(unit.tags, query.wantedTags, weights.tagBoost) : 0),
  },
  {
    name: 'timeCue',
    kind: 'add',
    applies: (query) => query.whenQuestion,
    value: (unit, catchUp, query, weights) => timeCue(query.whenQuestion, unit.hasTimeExpression, catchUp, weights),
  },
  {
    name: 'period',
    kind: 'add',
    applies: (query) => query.period !== null,
    value: (unit, _catchUp, query, weights) => weights.periodBoost * instantCoincidence(unit.timeMs, query.period!, weights.periodSharpness),
  },
  {
    name: 'eventPeriod',
    kind: 'add',
    applies: (query) => query.period !== null,
    value: (unit, _catchUp, query, weights) =>
      unit.eventPeriod ? weights.eventPeriodBoost * periodCoincidence(unit.eventPeriod, query.period!, weights.eventPeriodSharpness) : 0,
  },
  {
    name: 'questionTurn',
    kind: 'add',
    value: (unit, _catchUp, _query, weights) => (unit.isQuestion ? -weights.questionTurnPenalty : 0),
  },
  {
    name: 'disclosure',
    kind: 'add',
    applies: (query) => Boolean(query.queried),
    value: (unit, _catchUp, query, weights) => disclosureCue(unit.speaker === query.queried, unit.firstPerson, query.aboutPerson, weights),
  },
  {
    name: 'entity',
    kind: 'add',
    applies: (query) => query.entityWeights.size > 0,
    value: (unit, _catchUp, query, weights) => entityCue(unit.entities, query.entityWeights, weights.entityBoost),
  },
  {
    name: 'importance',
    kind: 'multiply',
    value: (unit, _catchUp, _query, weights) => importanceMultiplier(unit.importance, weights.importanceWeight),
  },
  {
    name: 'decay',
    kind: 'multiply',
    value: (unit, _catchUp, query, weights) => decayMultiplier(query.newestTimeMs - unit.timeMs, weights.decayHalfLifeDays, weights.decayWeight),
  },
] as const satisfies readonly FusedPart[];

export type FusedPartName = (typeof FUSED_PARTS)[number]['name'];
/** The parts that are cues (those with a `value`). */
export type CuePartName = Extract<(typeof FUSED_PARTS)[number], { value: unknown }>['name'];
/** The cues, in list order, with their value function. */
export type CuePart = FusedPart & { readonly name: CuePartName; readonly value: NonNullable<FusedPart['value']> };
export const CUE_PARTS: readonly CuePart[] = (FUSED_PARTS as readonly FusedPart[]).filter((part): part is CuePart => part.value !== undefined);

/** Every part of one unit's fused score, already weighted (see `FUSED_PARTS`). */
export type FusedParts = Record<FusedPartName, number>;

/** One term of a fused score: added to the running score, or multiplying it. */
export interface ScoreTerm {
  /** A part of the fusion, or what a reranker's blend added after it (src/memory/rerank-hits.ts). */
  term: FusedPartName | 'rerank_fused_share' | 'reranker';
  kind: 'add' | 'multiply';
  value: number;
}

/** A score broken into its terms: applying them in order, from 0, gives `score`. */
export interface ScoreExplanation {
  score: number;
  terms: ScoreTerm[];
}

/**
 * The fused score of one unit: its parts applied in list order from 0. When `terms` is given,
 * each part that changes the score is appended to it, so the explanation is this very
 * computation and cannot drift from it (`applyTerms` replays it exactly).
 */
export function fuseScore(parts: Readonly<FusedParts>, terms?: ScoreTerm[]): number {
  let score = 0;
  for (const { name, kind } of FUSED_PARTS) {
    const value = parts[name];
    if (kind === 'add') {
      score += value;
      if (terms && value !== 0) terms.push({ term: name, kind, value });
    } else {
      score *= value;
      if (terms && value !== 1) terms.push({ term: name, kind, value });
    }
  }
  return score;
}

/** Every part of many units' fused scores, one array per part, all indexed alike. */
export type FusedColumns = { readonly [K in FusedPartName]: ArrayLike<number> };

/**
 * `fuseScore` of units 0..count-1, their parts read from columns: the same additions and
 * multiplications in the same order, hence the same bits. It is the hot loop of every search, so
 * it is generated from `FUSED_PARTS` once, unrolled: a loop over the list per unit, or a pass
 * per part over every unit, measured several times slower (the loads per part do not hoist).
 */
export const fuseColumns: (columns: FusedColumns, count: number) => Float64Array = generateFuseColumns();

function generateFuseColumns(): (columns: FusedColumns, count: number) => Float64Array {
  const load = FUSED_PARTS.map(({ name }, k) => `const c${k} = columns[${JSON.stringify(name)}];`);
  const apply = FUSED_PARTS.map(({ kind }, k) => `s ${kind === 'add' ? '+=' : '*='} c${k}[i];`);
  const body = [...load, 'const score = new Float64Array(count);', 'for (let i = 0; i < count; i++) {', 'let s = 0;', ...apply, 'score[i] = s;', '}', 'return score;'];
  return new Function('columns', 'count', body.join('\n')) as (columns: FusedColumns, count: number) => Float64Array;
}

/** Unit `i`'s parts as `fuseScore` takes them (to explain a score). */
export function partsAt(columns: FusedColumns, i: number): FusedParts {
  const parts = {} as FusedParts;
  for (const { name } of FUSED_PARTS) parts[name] = columns[name][i];
  return parts;
}

/** Replays an explanation's terms from 0: equals the score they explain. */
export function applyTerms(terms: readonly ScoreTerm[]): number {
  let score = 0;
  for (const { kind, value } of terms) score = kind === 'add' ? score + value : score * value;
  return score;
}

/** The cues of many units, one column per cue, all indexed alike (`corpus/cue-columns.ts` fills them). */
export type CueColumns = { [K in CuePartName]: Float64Array };
