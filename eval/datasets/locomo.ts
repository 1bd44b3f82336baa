import { readFile } from 'node:fs/promises';
import type { BenchQuestion, BenchSession, BenchUser, Benchmark, CategorySpec } from '../benchmark.js';

/** The parts of a LoCoMo conversation the replay reads (see shared/datasets/README.md). */
interface LocomoTurn {
  speaker: string;
  dia_id: string;
  text: string;
  blip_caption?: string;
}

interface LocomoQa {
  question: string;
  evidence?: string[];
  category: number;
  answer?: string | number;
}

interface LocomoSample {
  sample_id: string;
  conversation: Record<string, unknown>;
  qa: LocomoQa[];
}

export const LOCOMO_CATEGORIES: CategorySpec[] = [
  { id: '1', label: 'multi-hop', headline: true },
  { id: '2', label: 'temporal', headline: true },
  { id: '3', label: 'open-domain', headline: true },
  { id: '4', label: 'single-hop', headline: true },
  { id: '5', label: 'adversarial', headline: false },
];

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** Parses LoCoMo's session date, "1:56 pm on 8 May, 2023", as UTC milliseconds. */
export function parseLocomoDate(text: string): number | undefined {
  const match = /^\s*(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*$/i.exec(text);
  if (!match) return undefined;
  const [, hourText, minuteText, meridiem, dayText, monthText, yearText] = match;
  const month = MONTHS.indexOf(monthText.slice(0, 3).toLowerCase());
  const hour12 = Number(hourText);
  if (month < 0 || hour12 < 1 || hour12 > 12) return undefined;
  const hour = (hour12 % 12) + (meridiem.toLowerCase() === 'pm' ? 12 : 0);
  return Date.UTC(Number(yearText), month, Number(dayText), hour, Number(minuteText));
}

/**
 * Normalises LoCoMo evidence: a few labels hold two ids ("D8:6; D9:17"), a stray colon
 * ("D:11:26") or nothing usable ("D"). Returns the distinct well-formed dia_ids, in order.
 */
export function parseLocomoEvidence(raw: readonly string[] | undefined): string[] {
  const ids: string[] = [];
  for (const entry of raw ?? []) {
    for (const piece of String(entry).split(/[;,\s]+/)) {
      const match = /^D:?(\d+):(\d+)$/i.exec(piece.trim());
      if (!match) continue;
      const id = `D${Number(match[1])}:${Number(match[2])}`;
      if (!ids.includes(id)) ids.push(id);
    }
  }
  return ids;
}

/** The message text the platform would receive for a turn: its words, then any shared photo. */
export function locomoTurnContent(turn: LocomoTurn): string {
  const caption = turn.blip_caption?.trim();
  return caption ? `${turn.text} [shares a photo: ${caption}]` : turn.text;
}

export async function loadLocomo(path: string): Promise<Benchmark> {
  const samples = JSON.parse(await readFile(path, 'utf8')) as LocomoSample[];
  if (!Array.isArray(samples)) throw new Error(`${path}: expected a JSON array of LoCoMo conversations`);

  const users: BenchUser[] = [];
  const questions: BenchQuestion[] = [];
  const notes: string[] = [];
  let noEvidence = 0;
  let unknownEvidence = 0;
  let unparsedDates = 0;

  for (const sample of samples) {
    const sessions = readSessions(sample, () => unparsedDates++);
    users.push({ userId: sample.sample_id, sessions });
    const sessionOfTurn = new Map<string, string>();
    for (const session of sessions) for (const turn of session.turns) sessionOfTurn.set(turn.turnId, session.sessionKey);

    sample.qa.forEach((qa, index) => {
      const parsed = parseLocomoEvidence(qa.evidence);
      const evidenceTurns = parsed.filter((id) => sessionOfTurn.has(id));
      unknownEvidence += parsed.length - evidenceTurns.length;
      if (evidenceTurns.length === 0) {
        noEvidence++;
        return;
      }
      questions.push({
        questionId: `${sample.sample_id}#${index}`,
        userId: sample.sample_id,
        query: qa.question,
        category: String(qa.category),
        evidenceTurns,
        evidenceSessions: [...new Set(evidenceTurns.map((id) => sessionOfTurn.get(id)!))],
        ...(qa.answer !== undefined ? { answer: String(qa.answer) } : {}),
      });
    });
  }

  if (unparsedDates > 0) notes.push(`${unparsedDates} session dates did not parse; their messages were sent without a timestamp.`);
  return {
    name: 'locomo',
    users,
    questions,
    categories: LOCOMO_CATEGORIES,
    headlineLabel: 'categories 1-4 (multi-hop, temporal, open-domain, single-hop)',
    skipped: [
      { reason: 'questions without usable evidence', count: noEvidence },
      { reason: 'evidence ids not found in the conversation (dropped)', count: unknownEvidence },
    ],
    notes,
  };
}

function readSessions(sample: LocomoSample, onUnparsedDate: () => void): BenchSession[] {
  const numbers = Object.keys(sample.conversation)
    .map((key) => /^session_(\d+)$/.exec(key)?.[1])
    .filter((n): n is string => n !== undefined)
    .map(Number)
    .sort((a, b) => a - b);
  return numbers.map((n) => {
    const key = `session_${n}`;
    const dateText = sample.conversation[`${key}_date_time`];
    const timestamp = typeof dateText === 'string' ? parseLocomoDate(dateText) : undefined;
    if (timestamp === undefined) onUnparsedDate();
    const turns = (sample.conversation[key] as LocomoTurn[]).map((turn) => ({
      turnId: turn.dia_id,
      role: turn.speaker,
      content: locomoTurnContent(turn),
      timestamp,
    }));
    return { sessionId: key, sessionKey: key, turns };
  });
}
