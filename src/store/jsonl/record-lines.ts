import { isStoredRecord, type StoredRecord } from '../stored-record.js';
import { indexIn, vecMember, withoutMember, type VecMember } from './line-scanner.js';

/** A line of a memories file that holds a memory of the user. */
export interface RecordLine {
  record: StoredRecord;
  /** Where the line starts in the bytes read. */
  start: number;
  /** With `cutVectors`, the record's own `vec` member cut out of the line before it was parsed (null: the record has none). */
  vec: VecMember | null;
}

/** Why a line is not a memory of the user: `torn`, no newline (a write cut short); `malformed`, anything else. */
export type LineFault = 'torn' | 'malformed';

/** What a walk over the lines hands each line to. Either method returns false to stop the walk. */
export interface RecordLineSink {
  record(line: RecordLine): boolean;
  /** The line is the bytes [start, end); `lineNumber` counts from 1, known when the walk began at the file's start. */
  reject(fault: LineFault, start: number, end: number, lineNumber: number | undefined): boolean;
}

/**
 * Reads the lines in [from, to) of a memories file (`from` a line start) as memories of `userId`:
 * every load goes through here, so this is the one place that says what a memory line is. Blank
 * lines are skipped; a last line without its newline before `to` is torn; a line that is not JSON,
 * not a memory (`isStoredRecord`) or another user's is malformed. With `cutVectors` the record's own
 * `vec` member is cut out of the bytes before parsing, so its 2.7 KB string is never built (the
 * caller decodes the base64 from the bytes); a record still holding a `vec` then (written where
 * the cut does not look) is malformed to that walk. False when the sink stopped the walk.
 */
export function readRecordLines(content: Buffer, from: number, to: number, userId: string, cutVectors: boolean, sink: RecordLineSink): boolean {
  let lineNumber = from === 0 ? 0 : -1;
  for (let start = from; start < to; ) {
    const newline = indexIn(content, 10, start);
    const torn = newline === -1 || newline > to;
    const end = torn ? to : newline;
    const lineStart = start;
    start = end + 1;
    if (lineNumber >= 0) lineNumber++;
    const vec = cutVectors ? vecMember(content, lineStart, end) : null;
    const text = vec ? withoutMember(content, lineStart, end, vec) : content.toString('utf8', lineStart, end);
    if (text.trim() === '') continue;
    const where = lineNumber >= 0 ? lineNumber : undefined;
    const record = torn ? null : parseRecord(text, userId);
    const kept = record !== null && !(cutVectors && record.vec !== undefined)
      ? sink.record({ record, start: lineStart, vec })
      : sink.reject(torn ? 'torn' : 'malformed', lineStart, end, where);
    if (!kept) return false;
  }
  return true;
}

function parseRecord(text: string, userId: string): StoredRecord | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return null;
  }
  return isStoredRecord(parsed) && parsed.user_id === userId ? parsed : null;
}

/**
 * A memory as its line of the memories file, newline included. The vector's base64 (2.7 KB of a
 * ~3.4 KB line) is placed after the other members without passing through JSON.stringify, which
 * on Node 20 checks a string for characters to escape at ~3.5 ns a character: ~10 µs a vector
 * against ~1.8 µs to check that it is whole base64, whose every character JSON keeps as it is.
 * Lines built and encoded, 8 to an append, 480 records of the Search phase's users (a scratch
 * loop): 7.1-8.3 against 14.5 µs a record. Anything else in `vec` is stringified as
 * before. Where the member stands in the line is irrelevant to a reader (`vecMember` finds it
 * anywhere at the top level).
 */
export function recordLine(record: StoredRecord): string {
  const { vec } = record;
  if (vec === undefined || !wholeBase64(vec)) return `${JSON.stringify(record)}\n`;
  const others = JSON.stringify({ ...record, vec: undefined });
  return `${others.slice(0, -1)}${others.length > 2 ? ',' : ''}"vec":"${vec}"}\n`;
}

/**
 * True when every character of the text is base64's (A-Z a-z 0-9 + / - _, padding at the end),
 * none of which JSON escapes. ASCII first (Node's decoder reads a character past 0xFF by its low
 * byte: "\ud841" as "A"); then, in whole groups of four, any other character (which the decoder
 * skips) makes the decoded bytes fewer than the length says.
 */
function wholeBase64(text: string): boolean {
  return text.length % 4 === 0 && Buffer.byteLength(text, 'utf8') === text.length && Buffer.from(text, 'base64').length === Buffer.byteLength(text, 'base64');
}

/** The lines of [from, to) as `readRecordLines` reads them, every one: the records, and the lines to quarantine with the warning for each. */
export interface ParsedLines {
  records: StoredRecord[];
  /** Where each record's line starts. */
  starts: number[];
  rejected: string[];
  warnings: Array<{ line?: number; msg: string }>;
}

const FAULT_WARNINGS: Record<LineFault, string> = {
  torn: 'torn last line (no newline: a write was cut short); quarantined',
  malformed: 'malformed memory line; quarantined',
};

/** Parses the lines in [from, to) with their `vec` kept; `from` is a line start. */
export function parseLines(content: Buffer, from: number, to: number, userId: string): ParsedLines {
  const parsed: ParsedLines = { records: [], starts: [], rejected: [], warnings: [] };
  readRecordLines(content, from, to, userId, false, {
    record: ({ record, start }) => {
      parsed.records.push(record);
      parsed.starts.push(start);
      return true;
    },
    reject: (fault, start, end, line) => {
      parsed.warnings.push({ line, msg: FAULT_WARNINGS[fault] });
      parsed.rejected.push(content.toString('utf8', start, end));
      return true;
    },
  });
  return parsed;
}

/**
 * Where the last Add's (or adds-only batch's) records start when fewer of them are there than it
 * wrote (`batch`), so it was never acknowledged; -1 when the records end with a whole Add (or with no Add at all).
 * Appends are serialised per user, so a crash can cut short only the last one. (Rewrites drop
 * `batch`, so deleting single memories never trips this check.)
 */
export function incompleteAddStart(records: readonly StoredRecord[]): number {
  const last = records.at(-1);
  const group = last && writeGroup(last);
  if (group === undefined || last!.batch === undefined) return -1;
  let first = records.length - 1;
  while (first > 0 && writeGroup(records[first - 1]) === group && records[first - 1].batch !== undefined) first--;
  return records.length - first >= last!.batch ? -1 : first;
}

/** What one append's records share: the Add's request id, or a batch's own id. */
function writeGroup(record: StoredRecord): string | undefined {
  return record.request_id !== undefined ? `request:${record.request_id}` : record.batch_id !== undefined ? `batch:${record.batch_id}` : undefined;
}
