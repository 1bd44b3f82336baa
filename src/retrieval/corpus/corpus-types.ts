import type { EntityMention } from '../entities/entity-mentions.js';
import type { ScoreExplanation } from '../fuse-scores.js';
import type { TimePeriod } from '../time-cues/calendar.js';

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
  /** The entities the unit mentions, its speaker included (`entityMentions`); the corpus indexes them. */
  entities: readonly EntityMention[];
  /** The text as duplicates share it (`duplicateKey`): answers that collapse duplicates hold each once. */
  textKey: string;
}

/** A query text as analysed: its index terms. */
export interface QueryText {
  terms: readonly string[];
  /**
   * Per term, how much it counts in BM25 (its idf's multiplier); absent: every term 1. The
   * vocabulary's expansion terms follow the query's own at a lower weight (query-expansion.ts).
   */
  termWeights?: readonly number[];
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
  /** Entity keys the query names (`entityMentions` of its text); the corpus keeps those it knows. */
  entities?: readonly string[];
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

export interface RankedUnit {
  seq: number;
  score: number;
  explanation?: ScoreExplanation;
  /** With `collapseDuplicates`: other matching units of the same text folded into this one. */
  duplicates?: number;
}
