import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The LoCoMo file the benches read unless told otherwise: `MEMORYPOOL_BENCH_LOCOMO`, else the dev
 * split beside the checkout (dist/bench/ → the package → ../shared/datasets), wherever the bench is
 * started from (a path relative to the working directory would quietly send generated texts).
 */
export const DEFAULT_LOCOMO =
  process.env.MEMORYPOOL_BENCH_LOCOMO ?? path.resolve(fileURLToPath(new URL('../..', import.meta.url)), '..', 'shared', 'datasets', 'locomo10-dev.json');

/**
 * The texts the bench sends: LoCoMo's conversations when the dataset is present (read in place,
 * never copied), else generated two-speaker small talk of the same shape and length.
 */

export interface Turn {
  speaker: string;
  /** The message as the platform sends it: the words, then any shared photo's caption. */
  content: string;
  sessionId: string;
  /** The session's date: the platform sends it as every message's timestamp. */
  timeMs: number;
}

export interface Conversation {
  id: string;
  turns: Turn[];
  questions: string[];
}

export interface Workload {
  source: 'locomo' | 'generated';
  path: string | null;
  conversations: Conversation[];
}

export interface AddMessage {
  role: string;
  content: string;
  timestamp: number;
}

export interface AddBody {
  request_id: string;
  user_id: string;
  session_id: string;
  messages: AddMessage[];
}

export async function loadWorkload(locomoPath: string | null): Promise<Workload> {
  if (locomoPath !== null && existsSync(locomoPath)) {
    return { source: 'locomo', path: locomoPath, conversations: parseLocomo(JSON.parse(await readFile(locomoPath, 'utf8'))) };
  }
  return { source: 'generated', path: null, conversations: generateConversations(8, 30, 23) };
}

/**
 * Add bodies of exactly `size` consecutive turns of one conversation (across its session
 * boundaries), cycling through the workload until `count`. Consecutive bodies go to different
 * users, so the requests in flight at once rarely share a user's lock, as on the platform.
 */
export function addChunks(workload: Workload, count: number, users: number, size = 20): AddBody[] {
  const bodies: AddBody[] = [];
  for (let copy = 0; bodies.length < count; copy++) {
    for (const conversation of workload.conversations) {
      for (let start = 0; start + size <= conversation.turns.length && bodies.length < count; start += size) {
        const turns = conversation.turns.slice(start, start + size);
        const n = bodies.length;
        bodies.push({
          request_id: `bench-add-${n}`,
          user_id: `bench-add-user-${n % users}`,
          session_id: `${conversation.id}-${turns[0].sessionId}-copy${copy}`,
          messages: turns.map(toMessage),
        });
      }
      if (bodies.length >= count) break;
    }
  }
  return bodies;
}

/** One conversation's sessions as the platform replays them: one Add per session, cut at `maxMessages`. */
export function sessionAdds(conversation: Conversation, userId: string, maxMessages = 20): AddBody[] {
  const bodies: AddBody[] = [];
  let current: AddBody | null = null;
  for (const turn of conversation.turns) {
    if (current === null || current.session_id !== turn.sessionId || current.messages.length >= maxMessages) {
      current = { request_id: `${userId}/${turn.sessionId}/${bodies.length}`, user_id: userId, session_id: turn.sessionId, messages: [] };
      bodies.push(current);
    }
    current.messages.push(toMessage(turn));
  }
  return bodies;
}

/** Every `step`-th body, so a subset keeps the whole's mix of conversations and lengths. */
export function strided<T>(items: readonly T[], wanted: number): T[] {
  if (wanted >= items.length) return [...items];
  const step = items.length / wanted;
  return Array.from({ length: wanted }, (_, i) => items[Math.floor(i * step)]);
}

function toMessage(turn: Turn): AddMessage {
  return { role: turn.speaker, content: turn.content, timestamp: turn.timeMs };
}

// ---------------------------------------------------------------------------------------------
// LoCoMo (shape in /work/shared/datasets/README.md)

interface LocomoTurn {
  speaker?: unknown;
  text?: unknown;
  blip_caption?: unknown;
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

function parseLocomo(data: unknown): Conversation[] {
  if (!Array.isArray(data)) throw new Error('LoCoMo file: expected a JSON array of conversations');
  const conversations: Conversation[] = [];
  for (const sample of data as Array<Record<string, unknown>>) {
    const conversation = (sample.conversation ?? {}) as Record<string, unknown>;
    const sessionKeys = Object.keys(conversation)
      .filter((key) => /^session_\d+$/.test(key))
      .sort((a, b) => Number(a.slice(8)) - Number(b.slice(8)));
    const turns: Turn[] = [];
    let fallbackTime = Date.UTC(2023, 0, 1);
    for (const key of sessionKeys) {
      const date = parseLocomoDate(String(conversation[`${key}_date_time`] ?? ''));
      fallbackTime = date ?? fallbackTime + 86_400_000;
      for (const raw of (conversation[key] ?? []) as LocomoTurn[]) {
        if (typeof raw.text !== 'string' || typeof raw.speaker !== 'string' || raw.text.trim() === '') continue;
        const caption = typeof raw.blip_caption === 'string' ? raw.blip_caption.trim() : '';
        turns.push({
          speaker: raw.speaker,
          content: caption ? `${raw.text} [shares a photo: ${caption}]` : raw.text,
          sessionId: key,
          timeMs: fallbackTime,
        });
      }
    }
    const questions = ((sample.qa ?? []) as Array<{ question?: unknown }>)
      .map((qa) => (typeof qa.question === 'string' ? qa.question.trim() : ''))
      .filter((question) => question !== '');
    conversations.push({ id: String(sample.sample_id ?? `conv-${conversations.length}`), turns, questions });
  }
  return conversations.filter((conversation) => conversation.turns.length > 0);
}

/** "1:56 pm on 8 May, 2023" as UTC milliseconds. */
function parseLocomoDate(text: string): number | undefined {
  const match = /^\s*(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([a-z]+),?\s+(\d{4})\s*$/i.exec(text);
  if (!match) return undefined;
  const month = MONTHS.indexOf(match[5].slice(0, 3).toLowerCase());
  if (month < 0) return undefined;
  const hour = (Number(match[1]) % 12) + (match[3].toLowerCase() === 'pm' ? 12 : 0);
  return Date.UTC(Number(match[6]), month, Number(match[4]), hour, Number(match[2]));
}

// ---------------------------------------------------------------------------------------------
// Generated stand-in: about LoCoMo's length (20-25 words a turn, ~690 turns a conversation)

const NAMES = ['Caroline', 'Melanie', 'Jon', 'Gina', 'Maria', 'Nate', 'Audrey', 'Andrew', 'Deborah', 'Jolene', 'Tim', 'Joanna'];
const OPENERS = ['Hey, guess what!', 'Oh wow, that sounds amazing.', 'Honestly,', 'You know what,', 'Thanks for asking!', 'Ha, I totally get that.'];
const SUBJECTS = ['I', 'My sister', 'Our neighbour', 'My best friend', 'The kids', 'My team at work', 'We'];
const VERBS = ['finally started', 'have been thinking about', 'just signed up for', 'keep talking about', 'are planning', 'really enjoyed'];
const OBJECTS = [
  'a pottery class downtown', 'the road trip to the coast', 'volunteering at the animal shelter', 'learning to play the guitar',
  'the charity run next month', 'a new job at the bakery', 'painting a sunset for the living room', 'the camping weekend by the lake',
];
const TAILS = ['It has been such a great way to relax after work.', 'I will tell you how it goes next time!', 'It reminded me of when we were kids.', 'What have you been up to lately?'];

function generateConversations(count: number, sessions: number, turnsPerSession: number): Conversation[] {
  const random = mulberry32(7);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  return Array.from({ length: count }, (_, c) => {
    const speakers = [NAMES[(2 * c) % NAMES.length], NAMES[(2 * c + 1) % NAMES.length]];
    const turns: Turn[] = [];
    const questions: string[] = [];
    for (let s = 1; s <= sessions; s++) {
      const timeMs = Date.UTC(2023, 0, 1) + (c * 400 + s * 9) * 86_400_000;
      for (let t = 0; t < turnsPerSession; t++) {
        const object = pick(OBJECTS);
        const content = `${pick(OPENERS)} ${pick(SUBJECTS)} ${pick(VERBS)} ${object}. ${pick(TAILS)}`;
        turns.push({ speaker: speakers[t % 2], content, sessionId: `session_${s}`, timeMs });
        if (t % 4 === 0) questions.push(`What did ${speakers[t % 2]} say about ${object}?`);
      }
    }
    return { id: `generated-${c}`, turns, questions };
  });
}

/** A small seeded generator: the same bench run sends the same texts. */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
