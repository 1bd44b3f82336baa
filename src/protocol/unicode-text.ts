import { createError, type ValidationIssue } from '../errors.js';

/**
 * The one rule for text at every door: a string must be valid Unicode. JSON's `\ud800` escape
 * makes a lone UTF-16 surrogate, which is no character at all: UTF-8 cannot spell it, so
 * PostgreSQL refuses it and a file would keep a replacement character in its place. A request
 * carrying one anywhere (a value or a key, declared field or not) is refused before any work,
 * on both stores alike; every other string, NUL and noncharacters included, is stored exactly.
 */

export interface LoneSurrogate {
  /** Where the string is; a key's path ends with the key itself. */
  path: Array<string | number>;
  /** The offending code unit's position in the string (UTF-16 units, from 0). */
  index: number;
}

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** The first string (depth first, keys before their values) that is not valid Unicode; null when there is none. */
export function findLoneSurrogate(value: unknown): LoneSurrogate | null {
  // An explicit stack whose entries point at their parent: a body nested thousands deep must
  // neither overflow the call stack nor cost a copy of its path per level.
  const stack: Visit[] = [{ value, key: null, parent: null }];
  while (stack.length > 0) {
    const visit = stack.pop()!;
    const current = visit.value;
    if (typeof current === 'string') {
      const index = loneSurrogateIndex(current);
      if (index >= 0) return { path: pathOf(visit), index };
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], key: i, parent: visit });
    } else if (typeof current === 'object' && current !== null) {
      const entries = Object.entries(current);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i];
        stack.push({ value: child, key, parent: visit }, { value: key, key, parent: visit });
      }
    }
  }
  return null;
}

interface Visit {
  value: unknown;
  key: string | number | null;
  parent: Visit | null;
}

function pathOf(visit: Visit): Array<string | number> {
  const path: Array<string | number> = [];
  for (let at: Visit | null = visit; at !== null && at.key !== null; at = at.parent) path.push(at.key);
  return path.reverse();
}

function loneSurrogateIndex(text: string): number {
  return LONE_SURROGATE.exec(text)?.index ?? -1;
}

function describe(found: LoneSurrogate): string {
  return `must be valid Unicode text: a lone surrogate at character ${found.index}`;
}

/** The platform's shape (422): one issue for the first string that is not valid Unicode. */
export function loneSurrogateIssues(input: unknown, root: string): ValidationIssue[] {
  const found = findLoneSurrogate(input);
  return found === null ? [] : [{ loc: [root, ...found.path], msg: `String ${describe(found)}`, type: 'string_unicode' }];
}

/** The MemoryPool protocol's shape (400 naming the field). */
export function refuseLoneSurrogates(input: unknown): void {
  const found = findLoneSurrogate(input);
  if (found !== null) throw createError('INVALID_PARAMETER', `${found.path.length > 0 ? found.path.join('.') : 'body'}: ${describe(found)}`);
}

/** A memories file line's reason to be skipped, or null. */
export function loneSurrogateReason(line: unknown): string | null {
  const found = findLoneSurrogate(line);
  return found === null ? null : `${found.path.join('.') || 'line'}: ${describe(found)}`;
}
