/**
 * Evidence-recall metrics, as pure functions of plain data.
 *
 * A ranking is the list a system returned, best first; each entry lists the benchmark turns that
 * unit contains (usually one; none when it could not be mapped; several when a unit spans turns).
 * Every metric is computed from the rank (1-based) of the first unit containing each evidence
 * item, so "a returned unit counts for every turn it contains".
 */

export const CUTOFFS = [1, 5, 10, 25, 50, 100] as const;
export type Cutoff = (typeof CUTOFFS)[number];
export type AtK = Record<Cutoff, number>;

export type Ranking = ReadonlyArray<readonly string[]>;

/** Words of returned content an answer model reads: recall is also counted within these. */
export const WORD_BUDGETS = [500, 1000, 2000, 4000] as const;
export type WordBudget = (typeof WORD_BUDGETS)[number];

/** Whitespace-separated words of a returned item's content (its prefix included). */
export function countWords(text: string): number {
  const words = text.match(/\S+/g);
  return words === null ? 0 : words.length;
}

/**
 * For each evidence item, the words a reader has read once it has read the whole first unit
 * holding it (the running sum of `words` up to that unit), or null when it is not returned.
 */
export function evidenceWordEnds(ranking: Ranking, words: readonly number[], evidence: readonly string[]): Array<number | null> {
  const ranks = evidenceRanks(ranking, evidence);
  const ends: number[] = [];
  let sum = 0;
  for (let i = 0; i < ranking.length; i++) ends.push((sum += words[i] ?? 0));
  return ranks.map((rank) => (rank === null ? null : ends[rank - 1]));
}

/** Share of the evidence read completely within the first `budget` words. */
export function recallWithinWords(wordEnds: ReadonlyArray<number | null>, budget: number): number {
  if (wordEnds.length === 0) return 0;
  return wordEnds.filter((end) => end !== null && end <= budget).length / wordEnds.length;
}

/** Rank of the first unit holding each evidence item, or null when it is not in the ranking. */
export function evidenceRanks(ranking: Ranking, evidence: readonly string[]): Array<number | null> {
  const firstRank = new Map<string, number>();
  ranking.forEach((items, index) => {
    for (const item of items) if (!firstRank.has(item)) firstRank.set(item, index + 1);
  });
  return evidence.map((item) => firstRank.get(item) ?? null);
}

/** Share of the evidence found within the first k units. */
export function recallAtK(ranks: ReadonlyArray<number | null>, k: number): number {
  if (ranks.length === 0) return 0;
  return ranks.filter((rank) => rank !== null && rank <= k).length / ranks.length;
}

/** 1 when at least one evidence item is within the first k units (LongMemEval's recall_any@k). */
export function recallAnyAtK(ranks: ReadonlyArray<number | null>, k: number): number {
  return ranks.some((rank) => rank !== null && rank <= k) ? 1 : 0;
}

/** 1 when every evidence item is within the first k units (LongMemEval's recall_all@k). */
export function recallAllAtK(ranks: ReadonlyArray<number | null>, k: number): number {
  return ranks.length > 0 && ranks.every((rank) => rank !== null && rank <= k) ? 1 : 0;
}

/** 1 / rank of the first unit holding any evidence; 0 when none was returned. */
export function reciprocalRank(ranks: ReadonlyArray<number | null>): number {
  const found = ranks.filter((rank): rank is number => rank !== null);
  return found.length === 0 ? 0 : 1 / Math.min(...found);
}

/**
 * Binary-relevance NDCG@k over evidence items: each item found at rank r ≤ k gains
 * 1 / log2(r + 1); the ideal places the items at ranks 1, 2, .... Capped at 1, since one unit
 * holding two evidence turns can beat the one-item-per-rank ideal.
 */
export function ndcgAtK(ranks: ReadonlyArray<number | null>, k: number): number {
  if (ranks.length === 0) return 0;
  let dcg = 0;
  for (const rank of ranks) if (rank !== null && rank <= k) dcg += 1 / Math.log2(rank + 1);
  let ideal = 0;
  for (let position = 1; position <= Math.min(ranks.length, k); position++) ideal += 1 / Math.log2(position + 1);
  return Math.min(1, dcg / ideal);
}

/**
 * Turns a unit ranking into a session ranking: each session at the position of its best unit,
 * duplicates dropped. This is LongMemEval's turn-to-session conversion (it widens k until k
 * distinct sessions are in view), so session @k means "the first k distinct sessions".
 */
export function sessionRanking(ranking: Ranking, sessionOf: (item: string) => string | undefined): string[][] {
  const seen = new Set<string>();
  const sessions: string[][] = [];
  for (const items of ranking) {
    const fresh: string[] = [];
    for (const item of items) {
      const session = sessionOf(item);
      if (session === undefined || seen.has(session)) continue;
      seen.add(session);
      fresh.push(session);
    }
    // A unit whose sessions were all seen already adds no new position.
    if (fresh.length > 0) sessions.push(fresh);
  }
  return sessions;
}

/**
 * Rank of the first unit holding a turn of each evidence session, or null: "an evidence session
 * among the sessions of the first k results". It counts k results, where `sessionRanking` counts
 * k distinct sessions; third parties publish LoCoMo's session figures the first way.
 */
export function sessionUnitRanks(ranking: Ranking, sessionOf: (item: string) => string | undefined, sessions: readonly string[]): Array<number | null> {
  const sessionsOfUnits = ranking.map((items) => items.map(sessionOf).filter((session): session is string => session !== undefined));
  return evidenceRanks(sessionsOfUnits, sessions);
}

/** The per-question record kept in results: enough to recompute every metric. */
export interface QuestionScore {
  questionId: string;
  category: string;
  /** Rank of each evidence turn (null: not in the returned list). */
  turnRanks: Array<number | null>;
  /** Rank of each evidence session in the distinct-session ranking. */
  sessionRanks: Array<number | null>;
  /** Rank of the first unit from each evidence session (absent in results written before it was kept). */
  sessionUnitRanks?: Array<number | null>;
  /** Units returned. */
  returned: number;
  /** Per evidence turn, the words read through the first unit holding it (absent when contents are unknown). */
  turnWordEnds?: Array<number | null>;
  /** Words of content returned in all. */
  wordsReturned?: number;
}

export function scoreQuestion(
  question: { questionId: string; category: string; evidenceTurns: readonly string[]; evidenceSessions: readonly string[] },
  ranking: Ranking,
  sessionOf: (turnId: string) => string | undefined,
  words?: readonly number[],
): QuestionScore {
  const score: QuestionScore = {
    questionId: question.questionId,
    category: question.category,
    turnRanks: evidenceRanks(ranking, question.evidenceTurns),
    sessionRanks: evidenceRanks(sessionRanking(ranking, sessionOf), question.evidenceSessions),
    sessionUnitRanks: sessionUnitRanks(ranking, sessionOf, question.evidenceSessions),
    returned: ranking.length,
  };
  if (words !== undefined) {
    score.turnWordEnds = evidenceWordEnds(ranking, words, question.evidenceTurns);
    score.wordsReturned = words.reduce((sum, count) => sum + count, 0);
  }
  return score;
}

export interface LevelMetrics {
  /** Questions averaged over (those with evidence at this level). */
  questions: number;
  recall: AtK;
  recallAny: AtK;
  recallAll: AtK;
  mrr: number;
  ndcg10: number;
}

/** Recall within word budgets of returned content, and how long an item is on average. */
export interface WordBudgetMetrics {
  recall: Record<WordBudget, number>;
  meanWordsPerItem: number;
}

export interface MetricSet {
  questions: number;
  /** Present when the contents of returned items were known. */
  words?: WordBudgetMetrics;
  /** Evidence turns (LoCoMo dia_ids, LongMemEval has_answer turns). */
  turn: LevelMetrics;
  /** Evidence sessions, over the distinct-session ranking. */
  session: LevelMetrics;
  /** Evidence sessions among the sessions of the first k results (present when every score kept its unit ranks). */
  sessionInResults?: LevelMetrics;
}

/** Means over questions; a question without evidence at a level does not count at that level. */
export function summarize(scores: readonly QuestionScore[]): MetricSet {
  const set: MetricSet = {
    questions: scores.length,
    turn: summarizeLevel(scores.map((score) => score.turnRanks)),
    session: summarizeLevel(scores.map((score) => score.sessionRanks)),
  };
  if (scores.length > 0 && scores.every((score) => score.sessionUnitRanks !== undefined)) {
    set.sessionInResults = summarizeLevel(scores.map((score) => score.sessionUnitRanks!));
  }
  const withWords = scores.filter((score) => score.turnWordEnds !== undefined && score.turnRanks.length > 0);
  if (withWords.length > 0) {
    const items = withWords.reduce((sum, score) => sum + score.returned, 0);
    set.words = {
      recall: Object.fromEntries(WORD_BUDGETS.map((budget) => [budget, mean(withWords.map((score) => recallWithinWords(score.turnWordEnds!, budget)))])) as Record<WordBudget, number>,
      meanWordsPerItem: items === 0 ? 0 : withWords.reduce((sum, score) => sum + (score.wordsReturned ?? 0), 0) / items,
    };
  }
  return set;
}

function summarizeLevel(allRanks: ReadonlyArray<ReadonlyArray<number | null>>): LevelMetrics {
  const ranks = allRanks.filter((r) => r.length > 0);
  const atK = (metric: (r: ReadonlyArray<number | null>, k: number) => number): AtK =>
    Object.fromEntries(CUTOFFS.map((k) => [k, mean(ranks.map((r) => metric(r, k)))])) as AtK;
  return {
    questions: ranks.length,
    recall: atK(recallAtK),
    recallAny: atK(recallAnyAtK),
    recallAll: atK(recallAllAtK),
    mrr: mean(ranks.map(reciprocalRank)),
    ndcg10: mean(ranks.map((r) => ndcgAtK(r, 10))),
  };
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) return 0;
  let sum = 0;
  for (const value of values) sum += value;
  return sum / values.length;
}

/** Nearest-rank percentile (p in 0-100) of a sample; 0 for an empty one. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index];
}

export interface LatencySummary {
  count: number;
  p50Ms: number;
  p95Ms: number;
  meanMs: number;
  maxMs: number;
}

export function summarizeLatency(millis: readonly number[]): LatencySummary {
  return {
    count: millis.length,
    p50Ms: percentile(millis, 50),
    p95Ms: percentile(millis, 95),
    meanMs: mean(millis),
    maxMs: millis.length === 0 ? 0 : Math.max(...millis),
  };
}
