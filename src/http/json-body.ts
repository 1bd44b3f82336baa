import { isAscii } from 'node:buffer';
import { markLiteral } from '../protocol/number-literals.js';

/**
 * A JSON parser that sees numbers as written. The platform's contract rejects `top_k: 100.0`
 * but accepts a timestamp of `1704067200000.0`, and `JSON.parse` cannot tell `100.0` from
 * `100`. This parser marks, on each object, the keys whose number literal had a fraction or an
 * exponent (src/protocol/number-literals.ts), and reads a literal too large for a double as the largest finite one. It also bounds nesting depth (deep bodies must be a 400, not a stack overflow)
 * and never lets a `__proto__` key reach an object's prototype.
 */

export const MAX_JSON_DEPTH = 64;

export class JsonSyntaxError extends Error {
  constructor(message: string, readonly position: number) {
    super(`${message} at position ${position}`);
    this.name = 'JsonSyntaxError';
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?/y;
// The longest run of characters a string may hold as they are (not a quote, a backslash or a
// control character), matched at a position: V8 runs a negated class this way about twice as
// fast as searching for the next stop, and both several times faster than a loop over charCodeAt
// (1 MB: ~0.7, ~1.5 and ~3.6 ms).
const STRING_RUN = /[^"\\\u0000-\u001f]*/y;
const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A body's text; throws on bytes that are not UTF-8. An all-ASCII body (most are: English text,
 * and Python's json module escapes every other character by default) is read as Latin-1, the
 * same characters at a sixth of the cost (1 MB: ~0.18 ms with the check, against ~1.1 for the
 * strict UTF-8 decoder).
 */
export function decodeBody(buffer: Buffer): string {
  return isAscii(buffer) ? buffer.toString('latin1') : utf8.decode(buffer);
}

/**
 * The stretches of a text with no character a string stops at (a quote, a backslash or a control
 * character), recorded ahead of the parse by a reader that has the text in pieces anyway
 * (body-reader.ts reads a large body in slices, between which other requests run): the parse then
 * crosses a long string without scanning it, in one step of the event loop. Only stretches of
 * `LONG_RUN` characters or more are kept; the parse scans the rest as it would without them.
 */
export class StopFreeRuns {
  static readonly LONG_RUN = 1024;
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private open = -1;
  private cursor = 0;

  /** Records the runs of `piece`, the text's next piece, which starts at `offset` in the text. */
  scan(piece: string, offset: number): void {
    for (let at = 0; at < piece.length; ) {
      STRING_RUN.lastIndex = at;
      STRING_RUN.test(piece);
      const stop = STRING_RUN.lastIndex;
      if (this.open < 0) this.open = offset + at;
      // A run reaching the piece's end may go on in the next one.
      if (stop >= piece.length) return;
      this.close(offset + stop);
      at = stop + 1;
    }
  }

  /** The text ends at `length`: a run still open ends there. */
  finish(length: number): void {
    if (this.open >= 0) this.close(length);
  }

  /** Every position moves back by `count` (a byte order mark taken off the text's start). */
  shift(count: number): void {
    for (let i = 0; i < this.starts.length; i++) {
      this.starts[i] = Math.max(0, this.starts[i] - count);
      this.ends[i] -= count;
    }
  }

  /**
   * Where the run holding `pos` ends (the first stop at or after `pos`, or the text's end), or -1
   * when no recorded run holds it. The parse asks in increasing order of `pos`.
   */
  endAt(pos: number): number {
    while (this.cursor < this.ends.length && this.ends[this.cursor] <= pos) this.cursor++;
    return this.cursor < this.ends.length && this.starts[this.cursor] <= pos ? this.ends[this.cursor] : -1;
  }

  private close(end: number): void {
    if (end - this.open >= StopFreeRuns.LONG_RUN) {
      this.starts.push(this.open);
      this.ends.push(end);
    }
    this.open = -1;
  }
}

/** `runs`, when given, were recorded over this very text (StopFreeRuns). */
export function parseJson(text: string, maxDepth = MAX_JSON_DEPTH, runs?: StopFreeRuns): unknown {
  let pos = 0;

  const fail = (message: string): never => {
    throw new JsonSyntaxError(message, pos);
  };
  const skipWhitespace = (): void => {
    while (pos < text.length) {
      const c = text.charCodeAt(pos);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) pos++;
      else break;
    }
  };

  const parseString = (): string => {
    pos++; // opening quote
    let out = '';
    for (;;) {
      let stop = runs === undefined ? -1 : runs.endAt(pos);
      if (stop < 0) {
        STRING_RUN.lastIndex = pos;
        STRING_RUN.test(text);
        stop = STRING_RUN.lastIndex;
      }
      if (stop >= text.length) {
        pos = text.length;
        return fail('Unterminated string');
      }
      out += text.slice(pos, stop);
      pos = stop;
      const c = text.charCodeAt(pos);
      if (c === 0x22) {
        pos++;
        return out;
      }
      if (c !== 0x5c) fail('Unescaped control character in string');
      const escape = text[pos + 1];
      if (escape === 'u') {
        const hex = text.slice(pos + 2, pos + 6);
        if (!/^[0-9a-fA-F]{4}$/.test(hex)) fail('Invalid unicode escape');
        out += String.fromCharCode(parseInt(hex, 16));
        pos += 6;
      } else if (escape !== undefined && escape in ESCAPES) {
        out += ESCAPES[escape];
        pos += 2;
      } else {
        fail('Invalid escape');
      }
    }
  };

  const parseValue = (depth: number, container?: object, key?: string | number): unknown => {
    skipWhitespace();
    const c = text[pos];
    if (c === '{') {
      if (depth >= maxDepth) fail(`Nesting deeper than ${maxDepth}`);
      pos++;
      const object: Record<string, unknown> = {};
      skipWhitespace();
      if (text[pos] === '}') {
        pos++;
        return object;
      }
      for (;;) {
        skipWhitespace();
        if (text[pos] !== '"') fail('Expected a string key');
        const name = parseString();
        skipWhitespace();
        if (text[pos] !== ':') fail("Expected ':'");
        pos++;
        const value = parseValue(depth + 1, object, name);
        Object.defineProperty(object, name, { value, enumerable: true, writable: true, configurable: true });
        skipWhitespace();
        if (text[pos] === ',') {
          pos++;
          continue;
        }
        if (text[pos] === '}') {
          pos++;
          return object;
        }
        fail("Expected ',' or '}'");
      }
    }
    if (c === '[') {
      if (depth >= maxDepth) fail(`Nesting deeper than ${maxDepth}`);
      pos++;
      const array: unknown[] = [];
      skipWhitespace();
      if (text[pos] === ']') {
        pos++;
        return array;
      }
      for (;;) {
        array.push(parseValue(depth + 1, array, array.length));
        skipWhitespace();
        if (text[pos] === ',') {
          pos++;
          continue;
        }
        if (text[pos] === ']') {
          pos++;
          return array;
        }
        fail("Expected ',' or ']'");
      }
    }
    if (c === '"') return parseString();
    if (text.startsWith('true', pos)) {
      pos += 4;
      return true;
    }
    if (text.startsWith('false', pos)) {
      pos += 5;
      return false;
    }
    if (text.startsWith('null', pos)) {
      pos += 4;
      return null;
    }
    NUMBER.lastIndex = pos;
    const match = NUMBER.exec(text);
    if (match && match[0].length > 0) {
      pos += match[0].length;
      // A literal beyond the double range (`1` and 400 zeros) becomes the largest finite number
      // of its sign, still marked by how it was written: every numeric field either clamps it
      // (top_k, limit: the contract clamps an integer above the maximum) or range-checks it
      // into a 422, where refusing the whole body as malformed JSON would be wrong.
      const parsed = Number(match[0]);
      const value = Number.isFinite(parsed) ? parsed : Math.sign(parsed) * Number.MAX_VALUE;
      // A repeated key's last value is the one kept (as JSON.parse does): so is its literal.
      if (container !== undefined && key !== undefined) markLiteral(container, key, Boolean(match[1] || match[2]));
      return value;
    }
    return fail(pos >= text.length ? 'Unexpected end of input' : 'Unexpected token');
  };

  const value = parseValue(0);
  skipWhitespace();
  if (pos < text.length) fail('Unexpected data after the JSON value');
  return value;
}
