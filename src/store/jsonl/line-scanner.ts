/**
 * Byte-level reading of a memories file: lines, and the few members a load or a count needs,
 * found in the bytes without parsing them as JSON.
 */

/** `,"vec":"`: a `"` preceded by `,` is never inside a JSON string (there it would be `\"`), so this is the key itself. */
const VEC_KEY = Buffer.from(',"vec":"', 'latin1');

/** Bytes a search looks at per call (see `indexIn`). */
const SEARCH_WINDOW = 1 << 30;

/**
 * `content.indexOf(value, from)`, found before `to` or -1, right past 2 GiB too: Node's indexOf
 * returns offsets beyond 2^31 wrapped to negative numbers (a million memories' file is 3 GB; the
 * load looped forever on it), so it searches subarrays of at most 1 GiB, whose offsets stay small.
 */
export function indexIn(content: Buffer, value: number | Buffer, from: number, to = content.length, window = SEARCH_WINDOW): number {
  const overlap = typeof value === 'number' ? 0 : value.length - 1;
  for (let at = from; at < to; ) {
    const end = Math.min(to, at + Math.max(window, overlap + 1));
    const found = content.subarray(at, end).indexOf(value);
    if (found !== -1) return at + found;
    if (end === to) return -1;
    // A needle of several bytes may straddle two windows.
    at = end - overlap;
  }
  return -1;
}

/** Newline-terminated lines with something on them (a torn last line is not a memory), counted up to `atMost`. */
export function countLines(content: Buffer, atMost = Infinity): number {
  let count = 0;
  let start = 0;
  for (let end = indexIn(content, 10, start); end !== -1 && count < atMost; end = indexIn(content, 10, start)) {
    if (end > start) count++;
    start = end + 1;
  }
  return count;
}

/** Where the JSON string starting at `from` ends (its closing quote; escaped quotes skipped), or `end`. */
export function stringEnd(content: Buffer, from: number, end: number): number {
  for (let i = from; i < end; i++) {
    if (content[i] === 0x5c) i++;
    else if (content[i] === 0x22) return i;
  }
  return end;
}

/** A record's own `vec` member in a line: from its leading comma to its closing quote, and its base64 between. */
export interface VecMember {
  key: number;
  close: number;
  /** The base64 text's first byte (its end is `close`). */
  value: number;
}

/** The record's own `vec` member in the line [start, end); null when it has none. */
export function vecMember(content: Buffer, start: number, end: number): VecMember | null {
  const first = indexIn(content, VEC_KEY, start, end);
  if (first === -1) return null;
  // Where a line written by recordLine has it: last, its string closing right before the line's
  // final brace. That brace closes the line's object, whose last member it is, so it is the
  // record's own member without counting how deep the key stands (~2.4 µs of bytes walked a memory).
  const firstClose = indexIn(content, 0x22, first + VEC_KEY.length, end);
  if (firstClose === end - 2 && content[end - 1] === 0x7d) return { key: first, close: firstClose, value: first + VEC_KEY.length };
  const key = recordVecKey(content, start, end, first);
  if (key === -1 || key >= end) return null;
  const value = key + VEC_KEY.length;
  const close = indexIn(content, 0x22, value, end);
  return close === -1 || close >= end ? null : { key, close, value };
}

/** The line [start, end) as text without the member. */
export function withoutMember(content: Buffer, start: number, end: number, member: VecMember): string {
  return content.toString('utf8', start, member.key) + content.toString('utf8', member.close + 1, end);
}

/**
 * Where the record's own `vec` member starts in the line [start, end) (its leading comma), or -1;
 * `first` is where the key's bytes first occur in the line (the caller has looked already).
 * A metadata key named `vec` holds the same bytes one level deeper: it is the user's value, not a
 * vector, and must stay in the record (a record stored without a vector would otherwise have it
 * cut out and decoded as its vector).
 */
function recordVecKey(content: Buffer, start: number, end: number, first: number): number {
  for (let key = first; key !== -1; key = indexIn(content, VEC_KEY, key + 1, end)) {
    if (nestingAt(content, start, key) === 1) return key;
  }
  return -1;
}

/** How deep in objects and arrays the byte at `at` is, counted from the line's start; -1 inside a string. */
function nestingAt(content: Buffer, start: number, at: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < at; i++) {
    const byte = content[i];
    if (inString) {
      if (byte === 0x5c) i++;
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x7b || byte === 0x5b) depth++;
    else if (byte === 0x7d || byte === 0x5d) depth--;
  }
  return inString ? -1 : depth;
}
