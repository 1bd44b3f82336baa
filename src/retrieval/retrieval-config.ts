/**
 * Every weight of the fused search score, in one place. `fuse-scores.ts` documents how each
 * term enters the score; the defaults come from the dev-split measurements in eval/README.md
 * (checked on both LoCoMo and LongMemEval, never tuned to one alone; the event-period boost and
 * the question-turn penalty were chosen by `npm run eval -- tune` on every held-out fold, the
 * period boost 0.3 on every LoCoMo fold, tied on every LongMemEval one; the period sharpnesses
 * stay 0 because no value above it held there; the disclosure cue with the speaker boost lowered to
 * 0.1, on every LoCoMo fold, tied on every LongMemEval one: eval/ROUND3-ITEM5.md).
 */
export interface RetrievalWeights {
  /** Share of the min-max normalised dense (cosine) score in the base score; the rest is BM25. 0 = BM25 only, 1 = dense only. */
  denseWeight: number;
  /** Weight of the previous turn's vector blended into a turn's dense vector (the question often sits in the turn before the answer). */
  contextWeight: number;
  /** Share of the better session neighbour's base score added to a unit's score. */
  neighbourWeight: number;
  /**
   * Added to units spoken by the one known speaker a query names (soft: never a filter). Their
   * first-person turns get `disclosureBoost` on top: 0.1 + 0.1 there, 0.1 elsewhere (0.15 flat before).
   */
  speakerBoost: number;
  /** Added to the turns of the generic role (user, assistant) a query is about: "what did I…" → the user's turns. */
  roleBoost: number;
  /** Added per query tag (or query word) that equals one of the unit's tags exactly. */
  tagBoost: number;
  /** Added to units holding a time expression when the query asks "when". */
  timeCueBoost: number;
  /**
   * Added on top of `timeCueBoost`, for a "when" question, to a turn holding a time expression among the
   * first two turns of its session: people catch up there on what happened since they last talked.
   */
  catchUpBoost: number;
  /** Added to units whose time falls in a period the query names ("in May 2023"). */
  periodBoost: number;
  /** Added to units whose own event period (their time expressions resolved against their date) overlaps the period the query names. */
  eventPeriodBoost: number;
  /**
   * How much less a unit's date inside the query's period counts the longer the period: the period
   * boost is multiplied by (1 day / its length)^periodSharpness (`instantCoincidence`). 0 = flat.
   */
  periodSharpness: number;
  /** The same for the event-period boost, by the wider of the two periods (`periodCoincidence`). */
  eventPeriodSharpness: number;
  /** Subtracted from a turn that is itself a question between named speakers; its neighbours still get its full share. */
  questionTurnPenalty: number;
  /**
   * Added to a first-person turn of the speaker (or role) the query is about (`disclosureCue`):
   * people tell their own activities and tastes in the first person (issue 17 item 5).
   */
  disclosureBoost: number;
  /**
   * Added on top of `disclosureBoost` when the query asks about the person rather than an event:
   * an inference ("would X…", "likely") or a list ("what activities has X…") (`asksAboutPerson`).
   */
  aboutPersonBoost: number;
  /**
   * Added to a unit per entity of the query it mentions, times the entity's specificity among the
   * user's units (`entitySpecificity`: 1 for a name one unit mentions, near 0 for a speaker of half
   * of them); the entity's units also join a large user's candidates. 0 turns the cue off.
   */
  entityBoost: number;
  /**
   * Weight (an idf multiplier) of the WordNet synonyms and derivations of the query's content words
   * in BM25 (query-expansion.ts); 0 = no expansion.
   */
  expansionWeight: number;
  /** The same for their direct hypernyms ("dog" → "canine"). */
  hypernymWeight: number;
  /** Importance multiplier span: the score is multiplied by 1 + importanceWeight × (importance − 0.5). */
  importanceWeight: number;
  /** Share of the score subject to time decay: multiplier = 1 − decayWeight + decayWeight × 0.5^(age / half-life). */
  decayWeight: number;
  /** Half-life of the decay in days; age is measured from the user's newest memory, not from today. */
  decayHalfLifeDays: number;
  /** Share of an option's (multiple-choice answer's) score added to the query's. */
  optionWeight: number;
  /** Users with at most this many units are scored exhaustively; larger ones take HNSW candidates. */
  exhaustiveLimit: number;
  /**
   * Candidates taken from each list (BM25, HNSW) for users above `exhaustiveLimit`, before their
   * session neighbours join them. 300, not the 1,000 it was: on the dev sets stored as one user
   * each (`npm run eval -- tune … --one-user --exhaustive-limit 0`, LoCoMo ~4,800 memories,
   * LongMemEval-S ~55,000) R@10 is the same at 300 as at 1,000 (80.3 and 66.9; exhaustive scoring
   * 80.5 and 66.9) and R@50 too, where 200 starts to lose (LongMemEval R@50 89.7 → 86.4); and a
   * Search of a 100k-memory user takes a third of the time (p50 33 → 11 ms: eval/README.md, "Large users").
   */
  candidatePool: number;
}

export const DEFAULT_RETRIEVAL_WEIGHTS: Readonly<RetrievalWeights> = Object.freeze({
  denseWeight: 0.5,
  contextWeight: 0.5,
  neighbourWeight: 0.5,
  speakerBoost: 0.1,
  roleBoost: 0.3,
  tagBoost: 0.2,
  timeCueBoost: 0.05,
  catchUpBoost: 0.1,
  periodBoost: 0.3,
  eventPeriodBoost: 0.2,
  periodSharpness: 0,
  eventPeriodSharpness: 0,
  questionTurnPenalty: 0.15,
  disclosureBoost: 0.1,
  aboutPersonBoost: 0.05,
  entityBoost: 0,
  expansionWeight: 0.1,
  hypernymWeight: 0.1,
  importanceWeight: 0.2,
  decayWeight: 0.05,
  decayHalfLifeDays: 30,
  optionWeight: 0.3,
  exhaustiveLimit: 20_000,
  candidatePool: 300,
});

/**
 * The dense share when the encoder is a sentence-transformers model the user brought
 * (MEMORYPOOL_MODEL_DIR; MEMORYPOOL_DENSE_WEIGHT overrides either). 0.5 was measured for
 * USE-lite, whose dense-only recall@10 on LoCoMo (~32) is half BM25's (~62); encoders such as
 * e5 or bge retrieve better than BM25 alone on conversational memory, so their cosine deserves
 * the larger share. Not measured here (no such model can be downloaded on the build machines):
 * a starting point to check with `npm run eval -- tune`.
 */
export const BROUGHT_ENCODER_DENSE_WEIGHT = 0.7;

/**
 * The evaluation platform's `/search` differs from the defaults (which `/mem/search` and `/invoke`
 * use, as the MemoryPool protocol asks for a 30-day decay) only where data decided it: decay was
 * worth nothing on the dev conversations and cost about a point on unseen ones (eval/README.md).
 */
export const PLATFORM_SEARCH_OVERRIDES: Readonly<Partial<RetrievalWeights>> = Object.freeze({ decayWeight: 0 });

/** The weights a search profile starts from: the defaults, or the platform's. */
export function profileWeights(profile: 'platform' | 'memorypool' = 'memorypool'): RetrievalWeights {
  return resolveWeights(profile === 'platform' ? PLATFORM_SEARCH_OVERRIDES : {});
}

export function resolveWeights(overrides?: Partial<RetrievalWeights>): RetrievalWeights {
  return { ...DEFAULT_RETRIEVAL_WEIGHTS, ...overrides };
}
