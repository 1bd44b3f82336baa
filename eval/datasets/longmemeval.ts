import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { BenchQuestion, BenchSession, BenchUser, Benchmark } from '../benchmark.js';

/** One LongMemEval question with its haystack (see shared/datasets/README.md). */
interface LongMemEvalEntry {
  question_id: string;
  question_type: string;
  question: string;
  question_date?: string;
  haystack_dates: string[];
  haystack_session_ids: string[];
  haystack_sessions: Array<Array<{ role: string; content: string; has_answer?: boolean }>>;
  answer_session_ids: string[];
  answer?: string | number;
}

const QUESTION_TYPES = [
  'single-session-user',
  'single-session-assistant',
  'single-session-preference',
  'multi-session',
  'knowledge-update',
  'temporal-reasoning',
];

/** Parses LongMemEval's "2023/05/23 (Tue) 06:47" as UTC milliseconds. */
export function parseLongMemEvalDate(text: string): number | undefined {
  const match = /^\s*(\d{4})\/(\d{1,2})\/(\d{1,2})\s*(?:\([A-Za-z]+\))?\s*(?:(\d{1,2}):(\d{2}))?/.exec(text);
  if (!match) return undefined;
  const [, year, month, day, hour, minute] = match;
  return Date.UTC(Number(year), Number(month) - 1, Number(day), Number(hour ?? 0), Number(minute ?? 0));
}

/** Accepts a folder of question files, or one file holding a question or an array of them. */
async function readEntries(path: string): Promise<LongMemEvalEntry[]> {
  if ((await stat(path)).isDirectory()) {
    const names = (await readdir(path)).filter((name) => name.endsWith('.json')).sort();
    const entries: LongMemEvalEntry[] = [];
    for (const name of names) entries.push(...asEntries(JSON.parse(await readFile(join(path, name), 'utf8'))));
    return entries;
  }
  return asEntries(JSON.parse(await readFile(path, 'utf8')));
}

function asEntries(value: unknown): LongMemEvalEntry[] {
  return (Array.isArray(value) ? value : [value]) as LongMemEvalEntry[];
}

export function isAbstention(questionId: string): boolean {
  return questionId.endsWith('_abs');
}

/** Converts one question into its own user (its haystack) and its question. */
export function convertLongMemEvalEntry(entry: LongMemEvalEntry, onUnparsedDate: () => void = () => {}): {
  user: BenchUser;
  question: BenchQuestion;
  repeatedSessions: number;
} {
  const userId = entry.question_id;
  const seen = new Map<string, number>();
  let repeatedSessions = 0;
  const evidenceTurns: string[] = [];
  const sessions: BenchSession[] = entry.haystack_sessions.map((messages, index) => {
    const sessionKey = entry.haystack_session_ids[index] ?? `session-${index}`;
    // The haystacks repeat a few sessions verbatim on another date; each copy is its own Add.
    const copies = (seen.get(sessionKey) ?? 0) + 1;
    seen.set(sessionKey, copies);
    if (copies > 1) repeatedSessions++;
    const sessionId = copies > 1 ? `${sessionKey}~${copies}` : sessionKey;
    const dateText = entry.haystack_dates[index];
    const timestamp = dateText === undefined ? undefined : parseLongMemEvalDate(dateText);
    if (timestamp === undefined) onUnparsedDate();
    const turns = messages.map((message, turnIndex) => {
      const turnId = `${sessionId}:${turnIndex}`;
      if (message.has_answer) evidenceTurns.push(turnId);
      return { turnId, role: message.role, content: message.content, timestamp };
    });
    return { sessionId, sessionKey, turns };
  });
  return {
    user: { userId, sessions },
    question: {
      questionId: entry.question_id,
      userId,
      query: entry.question,
      category: entry.question_type,
      evidenceTurns,
      evidenceSessions: [...new Set(entry.answer_session_ids)],
      ...(entry.answer !== undefined ? { answer: String(entry.answer) } : {}),
      ...(entry.question_date ? { askedAt: entry.question_date } : {}),
    },
    repeatedSessions,
  };
}

export async function loadLongMemEval(path: string): Promise<Benchmark> {
  const entries = await readEntries(path);
  const users: BenchUser[] = [];
  const questions: BenchQuestion[] = [];
  let abstentions = 0;
  let unparsedDates = 0;
  let repeatedSessions = 0;
  let noEvidence = 0;
  for (const entry of entries) {
    // LongMemEval's own retrieval evaluation leaves abstention questions out: they have no answer.
    if (isAbstention(entry.question_id)) {
      abstentions++;
      continue;
    }
    const converted = convertLongMemEvalEntry(entry, () => unparsedDates++);
    if (converted.question.evidenceSessions.length === 0 && converted.question.evidenceTurns.length === 0) {
      noEvidence++;
      continue;
    }
    repeatedSessions += converted.repeatedSessions;
    users.push(converted.user);
    questions.push(converted.question);
  }

  const types = [...new Set([...QUESTION_TYPES, ...questions.map((q) => q.category)])];
  const present = new Set(questions.map((q) => q.category));
  const notes: string[] = [];
  if (repeatedSessions > 0) notes.push(`${repeatedSessions} haystack sessions repeat an earlier session id; each copy was added as its own session.`);
  if (unparsedDates > 0) notes.push(`${unparsedDates} haystack dates did not parse; their messages were sent without a timestamp.`);
  const withoutTurnEvidence = questions.filter((q) => q.evidenceTurns.length === 0).length;
  if (withoutTurnEvidence > 0) notes.push(`${withoutTurnEvidence} questions have no has_answer turn: they count at session level only.`);
  return {
    name: 'longmemeval',
    users,
    questions,
    categories: types.filter((type) => present.has(type)).map((type) => ({ id: type, label: type, headline: true })),
    headlineLabel: 'all question types except abstention (_abs)',
    skipped: [
      { reason: 'abstention questions (_abs), as in LongMemEval\'s retrieval evaluation', count: abstentions },
      { reason: 'questions without answer sessions or has_answer turns', count: noEvidence },
    ],
    notes,
  };
}
