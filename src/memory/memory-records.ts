import { standaloneContent, type UnitText } from '../ingest/message-units.js';
import type { StoredRecord } from '../store/stored-record.js';
import type { Memory, MemoryFields } from '../domain/memory.js';

/** The unit a stored memory was made from: its text, speaker, time and tags. */
export function unitText(record: MemoryFields): UnitText {
  return {
    text: record.text,
    role: record.role,
    timeMs: instantMs(record.occurred_at ?? record.created_at),
    tags: record.tags,
  };
}

let lastInstant = '';
let lastInstantMs = NaN;

/**
 * `Date.parse` of a stored time, the last one remembered: a load reads each memory's time twice
 * (its features' fingerprint, its corpus unit) and a session's memories share one, so most
 * calls are a comparison rather than a parse (~0.6 µs). Only a UTC instant (`…Z`, as every
 * stored time is written) is remembered: any other form may read differently once `TZ` changes.
 */
export function instantMs(value: string): number {
  if (value === lastInstant) return lastInstantMs;
  const ms = Date.parse(value);
  if (value.endsWith('Z')) {
    lastInstant = value;
    lastInstantMs = ms;
  }
  return ms;
}

/**
 * Equal strings of one user's memories, kept once: each parsed line brings its own copy of the
 * user id, the model, the Add's request id and dates.
 */
export type SharedStrings = Map<string, string>;

/** The empty tag list of every memory without tags (frozen: records are replaced, never changed). */
export const NO_TAGS = Object.freeze([]) as unknown as string[];

export function shared(strings: SharedStrings | undefined, value: string): string {
  if (!strings) return value;
  const known = strings.get(value);
  if (known !== undefined) return known;
  strings.set(value, value);
  return value;
}

/** Makes a loaded record share its repeated strings with the user's other records. */
export function compactRecord(record: StoredRecord, strings: SharedStrings): void {
  record.user_id = shared(strings, record.user_id);
  record.source = shared(strings, record.source);
  record.created_at = shared(strings, record.created_at);
  if (record.session_id !== undefined) record.session_id = shared(strings, record.session_id);
  if (record.role !== undefined) record.role = shared(strings, record.role);
  if (record.occurred_at !== undefined) record.occurred_at = shared(strings, record.occurred_at);
  if (record.request_id !== undefined) record.request_id = shared(strings, record.request_id);
  if (record.agent_id !== undefined) record.agent_id = shared(strings, record.agent_id);
  if (record.run_id !== undefined) record.run_id = shared(strings, record.run_id);
  if (record.model !== undefined) record.model = shared(strings, record.model);
  if (record.tags.length === 0) record.tags = NO_TAGS;
}

/** White space that trimming and collapsing would change: at either end, other than a space, or a run. */
const SPACING_TO_COLLAPSE = /^\s|\s$|[^\S ]|  /;

/** What makes two memories the same text for the answers: trimmed, white space collapsed, any case. */
export function duplicateKey(text: string): string {
  // Most texts are spaced already: a test is cheaper than a replacement that rebuilds the string.
  return SPACING_TO_COLLAPSE.test(text) ? text.trim().replace(/\s+/g, ' ').toLowerCase() : text.toLowerCase();
}

/** A record's standalone content, built once: a record is replaced, never changed, so it cannot go stale. */
const contentCache = new WeakMap<StoredRecord, string>();

export function hitContent(record: StoredRecord): string {
  let content = contentCache.get(record);
  if (content === undefined) contentCache.set(record, (content = standaloneContent(unitText(record))));
  return content;
}

/**
 * The record as the doors show it: every field in the record's own order but the store's. A loop,
 * not a rest destructuring: V8 runs `{ seq, ...memory } = record` through a runtime call, 4.6 µs a
 * record against 0.3 (measured), and a Search builds up to a hundred of these.
 */
export function publicMemory(record: StoredRecord): Memory {
  const memory: Record<string, unknown> = {};
  for (const key in record) {
    if (key === 'seq' || key === 'batch' || key === 'batch_id' || key === 'vec' || key === 'model' || key === 'history' || key === 'fx') continue;
    memory[key] = record[key as keyof StoredRecord];
  }
  memory.version = record.version ?? 1;
  memory.updated_at = record.updated_at ?? record.created_at;
  memory.metadata = record.metadata ?? {};
  return memory as unknown as Memory;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** When a memory was last written (an update counts as new), Unix ms. */
export function memoryTime(memory: Pick<Memory, 'updated_at' | 'created_at'>): number {
  return Date.parse(memory.updated_at ?? memory.created_at);
}
