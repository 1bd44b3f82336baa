import type { MemoryFields } from '../domain/memory.js';
import { timeMsOf, type TimeField } from '../domain/time-fields.js';
import type { WhereField, WhereNode, WhereScalar } from '../domain/where.js';

/**
 * Evaluates a validated `where` (src/domain/where.ts) on one memory. As MongoDB does: a missing
 * field fails every test but `$ne`, `$nin` and `$exists: false`; comparisons hold between values
 * of one type only (a stored "2" is not greater than 1); `tags` tests its elements (`{tags: "x"}`
 * and `$contains` mean "carries x", `$in` "carries any of them").
 */
export function matchesWhere(record: MemoryFields, node: WhereNode): boolean {
  return compiledWhere(node)(record);
}

type RecordTest = (record: MemoryFields) => boolean;

/**
 * An expression as nested closures, built once per expression object: a filtered search tests
 * every memory of its user, and walking the expression's nodes for each (which operator, which
 * field) cost more than the tests themselves.
 */
const compiled = new WeakMap<WhereNode, RecordTest>();

function compiledWhere(node: WhereNode): RecordTest {
  let test = compiled.get(node);
  if (test === undefined) compiled.set(node, (test = compile(node)));
  return test;
}

function compile(node: WhereNode): RecordTest {
  if ('all' in node) {
    const children = node.all.map(compile);
    return (record) => {
      for (const child of children) if (!child(record)) return false;
      return true;
    };
  }
  if ('any' in node) {
    const children = node.any.map(compile);
    return (record) => {
      for (const child of children) if (child(record)) return true;
      return false;
    };
  }
  if ('not' in node) {
    const child = compile(node.not);
    return (record) => !child(record);
  }
  const { op, value } = node;
  if (node.field === 'tags') return (record) => matchesTags(record.tags, op, value);
  const read = fieldReader(node.field);
  switch (op) {
    case 'eq':
      return (record) => {
        const stored = read(record);
        return stored !== undefined && stored === value;
      };
    case 'ne':
      return (record) => {
        const stored = read(record);
        return stored === undefined || stored !== value;
      };
    case 'in':
      return (record) => {
        const stored = read(record);
        return stored !== undefined && (value as WhereScalar[]).includes(stored);
      };
    case 'nin':
      return (record) => {
        const stored = read(record);
        return stored === undefined || !(value as WhereScalar[]).includes(stored);
      };
    case 'exists':
      return (record) => (read(record) !== undefined) === value;
    case 'contains':
      return (record) => {
        const stored = read(record);
        return typeof stored === 'string' && stored.includes(value as string);
      };
    default: {
      const timeTest = timeComparison(node.field, op, value as WhereScalar);
      if (timeTest) return timeTest;
      // Comparisons hold between values of one type only: a stored "2" is not greater than 1.
      const bound = value as WhereScalar;
      const type = typeof bound;
      const holds = comparison(op);
      return (record) => {
        const stored = read(record);
        return stored !== undefined && typeof stored === type && holds(stored, bound);
      };
    }
  }
}

/** Unix ms of years 0000-9999, whose ISO 8601 form is 24 characters ("2024-01-31T12:00:00.000Z"). */
const LATEST_CANONICAL_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

/**
 * A comparison of a time field with whole milliseconds, tested on the stored text where it is in
 * the form `toISOString` writes (every time the service stamps, and most a client sends): those
 * texts sort as their instants do, so the bound's text compares with them as its number would,
 * with no parse and no lookup per memory (a window on `created_at` over 20,000 memories cost as
 * much as the search it filtered). Any other form of stored time is parsed (`timeMsOf`).
 */
function timeComparison(field: WhereField, op: 'gt' | 'gte' | 'lt' | 'lte', bound: WhereScalar): RecordTest | null {
  if (field !== 'created_at' && field !== 'updated_at' && field !== 'occurred_at' && field !== 'expires_at') return null;
  if (typeof bound !== 'number' || !Number.isInteger(bound) || bound < 0 || bound > LATEST_CANONICAL_MS) return null;
  const boundText = new Date(bound).toISOString();
  const holds = comparison(op);
  return (record) => {
    const stored = storedTimeField(record, field);
    const text = record[stored];
    if (text === undefined) return false;
    if (isCanonicalIso(text)) return holds(text, boundText);
    const ms = timeMsOf(record, stored);
    return ms !== undefined && holds(ms, bound);
  };
}

/** The field a memory's time is read from: `updated_at` is `created_at` until the memory is updated. */
function storedTimeField(record: MemoryFields, field: TimeField): TimeField {
  return field === 'updated_at' && record.updated_at === undefined ? 'created_at' : field;
}

/** Whether the text has the shape `toISOString` gives a year 0000-9999: YYYY-MM-DDTHH:mm:ss.sssZ. */
function isCanonicalIso(text: string): boolean {
  return (
    text.length === 24 &&
    text.charCodeAt(4) === 45 && // -
    text.charCodeAt(7) === 45 &&
    text.charCodeAt(10) === 84 && // T
    text.charCodeAt(13) === 58 && // :
    text.charCodeAt(16) === 58 &&
    text.charCodeAt(19) === 46 && // .
    text.charCodeAt(23) === 90 // Z
  );
}

function comparison(op: 'gt' | 'gte' | 'lt' | 'lte'): (stored: WhereScalar, bound: WhereScalar) => boolean {
  if (op === 'gt') return (stored, bound) => stored > bound;
  if (op === 'gte') return (stored, bound) => stored >= bound;
  if (op === 'lt') return (stored, bound) => stored < bound;
  return (stored, bound) => stored <= bound;
}

function matchesTags(tags: readonly string[], op: string, value: WhereScalar | WhereScalar[]): boolean {
  switch (op) {
    case 'eq':
    case 'contains':
      return tags.includes(value as string);
    case 'ne':
      return !tags.includes(value as string);
    case 'in':
      return (value as string[]).some((tag) => tags.includes(tag));
    case 'nin':
      return !(value as string[]).some((tag) => tags.includes(tag));
    case 'exists':
      return (tags.length > 0) === value;
    default:
      return false;
  }
}

/** How to read a field's value off a record (times as Unix ms; undefined when the memory has none), chosen once per leaf. */
function fieldReader(field: WhereField): (record: MemoryFields) => WhereScalar | undefined {
  switch (field) {
    case 'agent_id':
      return (record) => record.agent_id;
    case 'run_id':
      return (record) => record.run_id;
    case 'source':
      return (record) => record.source;
    case 'importance':
      return (record) => record.importance;
    case 'created_at':
      return (record) => timeMsOf(record, 'created_at');
    case 'updated_at':
      return (record) => timeMsOf(record, storedTimeField(record, 'updated_at'));
    case 'occurred_at':
      return (record) => timeMsOf(record, 'occurred_at');
    case 'expires_at':
      return (record) => timeMsOf(record, 'expires_at');
    default: {
      // Own keys only: `metadata.constructor` must not find Object.prototype's.
      const key = field.slice('metadata.'.length);
      return (record) => (record.metadata !== undefined && Object.hasOwn(record.metadata, key) ? record.metadata[key] : undefined);
    }
  }
}
