/**
 * The one shape every benchmark is loaded into, so replay, scoring and reporting never look at a
 * dataset's own format. A turn is the unit the benchmarks label as evidence.
 */

export type BenchmarkName = 'locomo' | 'longmemeval';

export interface BenchTurn {
  /** Unique within its user: LoCoMo's dia_id, LongMemEval's `<session>:<index>`. */
  turnId: string;
  role: string;
  content: string;
  /** Unix milliseconds (the session's date), absent when the dataset's date did not parse. */
  timestamp?: number;
}

export interface BenchSession {
  /** Unique within its user; sent as the Add's session_id. */
  sessionId: string;
  /** The id the benchmark labels evidence with (a dataset may repeat a session under one id). */
  sessionKey: string;
  turns: BenchTurn[];
}

export interface BenchUser {
  userId: string;
  sessions: BenchSession[];
}

export interface BenchQuestion {
  questionId: string;
  userId: string;
  query: string;
  /** LoCoMo's category number as a string, LongMemEval's question_type. */
  category: string;
  /** Turn ids of the user whose presence in the results is being measured. */
  evidenceTurns: string[];
  /** Session keys holding the answer (LongMemEval's answer_session_ids; derived for LoCoMo). */
  evidenceSessions: string[];
  /** The gold answer, for the QA score (LoCoMo's adversarial questions have none). */
  answer?: string;
  /** When the question is asked (LongMemEval's question_date), for an answer model resolving "last month". */
  askedAt?: string;
  /** What cross-validation folds over (default: `userId`); `mergeUsers` keeps the original user here. */
  foldGroup?: string;
}

export interface CategorySpec {
  id: string;
  label: string;
  /** Whether the category counts towards the headline figures. */
  headline: boolean;
}

export interface SkipCount {
  reason: string;
  count: number;
}

export interface Benchmark {
  name: BenchmarkName;
  users: BenchUser[];
  questions: BenchQuestion[];
  /** In display order; the report has one table per category. */
  categories: CategorySpec[];
  /** What the headline aggregates, in words, for the report. */
  headlineLabel: string;
  /** Questions or evidence left out, and why (the report lists them). */
  skipped: SkipCount[];
  /** Dataset-level oddities worth a line in the report (unparsed dates, repeated sessions). */
  notes: string[];
}

/** Maps each turn of a user to the session key it belongs to. */
export function sessionKeyOfTurn(user: BenchUser): Map<string, string> {
  const map = new Map<string, string>();
  for (const session of user.sessions) {
    for (const turn of session.turns) map.set(turn.turnId, session.sessionKey);
  }
  return map;
}

/** Keeps the first `limit` questions and only the users they ask about. */
export function limitBenchmark(benchmark: Benchmark, limit: number | undefined): Benchmark {
  if (limit === undefined || limit >= benchmark.questions.length) return benchmark;
  const questions = benchmark.questions.slice(0, limit);
  const askedUsers = new Set(questions.map((question) => question.userId));
  return {
    ...benchmark,
    questions,
    users: benchmark.users.filter((user) => askedUsers.has(user.userId)),
  };
}

/**
 * Every user's sessions as one user's (`--one-user`): the history of an agent that has worked with
 * everyone, or a team's shared memory. Each question is asked of that user, its evidence still the
 * turns of its own conversation, now among every other conversation's: recall of a user past the
 * exhaustive limit, which no dev user reaches alone. Ids are prefixed with the original user so
 * they stay unique; folds stay over the original users.
 */
export function mergeUsers(benchmark: Benchmark, userId = 'one-user'): Benchmark {
  const prefix = (user: string, id: string) => `${user}/${id}`;
  const sessions = benchmark.users.flatMap((user) =>
    user.sessions.map((session) => ({
      sessionId: prefix(user.userId, session.sessionId),
      sessionKey: prefix(user.userId, session.sessionKey),
      turns: session.turns.map((turn) => ({ ...turn, turnId: prefix(user.userId, turn.turnId) })),
    })),
  );
  const questions = benchmark.questions.map((question) => ({
    ...question,
    userId,
    evidenceTurns: question.evidenceTurns.map((turn) => prefix(question.userId, turn)),
    evidenceSessions: question.evidenceSessions.map((session) => prefix(question.userId, session)),
    foldGroup: question.foldGroup ?? question.userId,
  }));
  const turns = sessions.reduce((sum, session) => sum + session.turns.length, 0);
  return {
    ...benchmark,
    users: [{ userId, sessions }],
    questions,
    notes: [...benchmark.notes, `every conversation stored as one user's (--one-user): ${benchmark.users.length} users' ${turns} turns`],
  };
}

export function countWords(text: string): number {
  let count = 0;
  for (const _ of text.matchAll(/\S+/g)) count++;
  return count;
}
