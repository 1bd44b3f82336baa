import type { MemoryFields } from '../domain/memory.js';
import type { WhereField, WhereNode, WhereScalar } from '../domain/where.js';

/**
 * Evaluates a validated `where` (src/domain/where.ts) on one memory. As MongoDB does: a missing
 * field fails every test but `$ne`, `$nin` and `$exists: false`; comparisons hold between values
 * of one type only (a stored "2" is not greater than 1); `tags` tests its elements (`{tags: "x"}`
 * and `$contains` mean "carries x", `$in` "carries any of them").
 */
export function matchesWhere(record: MemoryFields, node: WhereNode): boolean {
  if ('all' in node) return node.all.every((child) => matchesWhere(record, child));
  if ('any' in node) return node.any.some((child) => matchesWhere(record, child));
  if ('not' in node) return !matchesWhere(record, node.not);
  if (node.field === 'tags') return matchesTags(record.tags, node.op, node.value);
  const stored = fieldValue(record, node.field);
  const value = node.value;
  switch (node.op) {
    case 'eq':
      return stored !== undefined && stored === value;
    case 'ne':
      return stored === undefined || stored !== value;
    case 'in':
      return stored !== undefined && (value as WhereScalar[]).includes(stored);
    case 'nin':
      return stored === undefined || !(value as WhereScalar[]).includes(stored);
    case 'exists':
      return (stored !== undefined) === value;
    case 'contains':
      return typeof stored === 'string' && stored.includes(value as string);
    default:
      return stored !== undefined && typeof stored === typeof value && compare(stored, value as WhereScalar, node.op);
  }
}

function compare(stored: WhereScalar, value: WhereScalar, op: 'gt' | 'gte' | 'lt' | 'lte'): boolean {
  if (op === 'gt') return stored > value;
  if (op === 'gte') return stored >= value;
  if (op === 'lt') return stored < value;
  return stored <= value;
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

/** The record's value of a field, times as Unix ms; undefined when the memory has none. */
function fieldValue(record: MemoryFields, field: WhereField): WhereScalar | undefined {
  switch (field) {
    case 'agent_id':
      return record.agent_id;
    case 'run_id':
      return record.run_id;
    case 'source':
      return record.source;
    case 'importance':
      return record.importance;
    case 'created_at':
      return timeOf(record.created_at);
    case 'updated_at':
      return timeOf(record.updated_at ?? record.created_at);
    case 'occurred_at':
      return timeOf(record.occurred_at);
    case 'expires_at':
      return timeOf(record.expires_at);
    default: {
      // Own keys only: `metadata.constructor` must not find Object.prototype's.
      const key = field.slice('metadata.'.length);
      return record.metadata !== undefined && Object.hasOwn(record.metadata, key) ? record.metadata[key] : undefined;
    }
  }
}

function timeOf(iso: string | undefined): number | undefined {
  if (iso === undefined) return undefined;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? ms : undefined;
}
