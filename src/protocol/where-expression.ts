import { WHERE_FIELDS, type WhereField, type WhereNamedField, type WhereNode, type WhereOperator, type WhereScalar } from '../domain/where.js';
import { parseInstant } from './instant.js';

/**
 * Reads a `where` filter expression (MongoDB/Chroma style) into the domain's WhereNode, or says
 * what is wrong and where: `where.$or[1].importance: must be a number`. Pure: the same JSON gives
 * the same answer on every door (POST /mem/search and /mem/list, /invoke, MCP, the CLI).
 *
 *   expression := { "$and": [expression, ...] } | { "$or": [...] } | { "$not": expression }
 *               | { field: value, ... }                       (each field ANDed; value: equality)
 *               | { field: { "$gt": value, "$lt": ... } }     (each operator ANDed)
 */

export const MAX_WHERE_DEPTH = 8;
export const MAX_WHERE_LEAVES = 64;
/** Values in one `$in` / `$nin`. */
export const MAX_WHERE_LIST = 256;

export type WhereResult = { ok: true; node: WhereNode } | { ok: false; place: string; message: string };

type Kind = 'scope' | 'tags' | 'number' | 'time' | 'metadata';

const FIELD_KINDS: Record<WhereNamedField, Kind> = {
  agent_id: 'scope',
  run_id: 'scope',
  source: 'scope',
  tags: 'tags',
  importance: 'number',
  created_at: 'time',
  updated_at: 'time',
  occurred_at: 'time',
  expires_at: 'time',
};

/** The operators each kind of field takes, in the order the messages list them. */
const OPERATORS: Record<Kind, readonly WhereOperator[]> = {
  scope: ['eq', 'ne', 'in', 'nin', 'exists', 'contains'],
  tags: ['eq', 'ne', 'contains', 'in', 'nin', 'exists'],
  number: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'exists'],
  time: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'exists'],
  metadata: ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'exists', 'contains'],
};
const ALL_OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'exists', 'contains'];
const FIELD_LIST = `${WHERE_FIELDS.join(', ')}, metadata.<key>`;

class WhereError extends Error {
  constructor(readonly place: string, message: string) {
    super(message);
  }
}

export function parseWhere(input: unknown, root = 'where'): WhereResult {
  const counter = { leaves: 0 };
  try {
    return { ok: true, node: expression(input, root, 1, counter) };
  } catch (error) {
    if (error instanceof WhereError) return { ok: false, place: error.place, message: error.message };
    throw error;
  }
}

/** Whether the expression has at least one condition (`{}` and `{"$and": []}`-like emptiness match everything). */
export function isEmptyWhere(node: WhereNode): boolean {
  return 'all' in node && node.all.every(isEmptyWhere);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function expression(input: unknown, place: string, depth: number, counter: { leaves: number }): WhereNode {
  if (!isPlainObject(input)) throw new WhereError(place, 'must be an object');
  if (depth > MAX_WHERE_DEPTH) throw new WhereError(place, `nesting deeper than ${MAX_WHERE_DEPTH}`);
  const parts: WhereNode[] = [];
  for (const [key, value] of Object.entries(input)) {
    const at = `${place}.${key}`;
    if (key === '$and' || key === '$or') {
      if (!Array.isArray(value) || value.length === 0) throw new WhereError(at, 'must be a non-empty array of expressions');
      const children = value.map((child, i) => expression(child, `${at}[${i}]`, depth + 1, counter));
      parts.push(key === '$and' ? { all: children } : { any: children });
    } else if (key === '$not') {
      parts.push({ not: expression(value, at, depth + 1, counter) });
    } else if (key.startsWith('$')) {
      throw new WhereError(at, 'unknown operator; expected $and, $or, $not or a field');
    } else {
      parts.push(...fieldConditions(key, value, at, counter));
    }
  }
  return parts.length === 1 ? parts[0] : { all: parts };
}

function fieldKind(field: string, place: string): Kind {
  if (field.startsWith('metadata.') && field.length > 'metadata.'.length) return 'metadata';
  if (Object.hasOwn(FIELD_KINDS, field)) return FIELD_KINDS[field as WhereNamedField];
  throw new WhereError(place, `unknown field; expected one of ${FIELD_LIST}`);
}

function fieldConditions(field: string, value: unknown, place: string, counter: { leaves: number }): WhereNode[] {
  const kind = fieldKind(field, place);
  const operators = isPlainObject(value) ? Object.entries(value) : [['$eq', value] as const];
  if (operators.length === 0) throw new WhereError(place, 'must name at least one operator');
  return operators.map(([name, operand]) => {
    // An equality written as a bare value is placed at the field, as written.
    const at = isPlainObject(value) ? `${place}.${name}` : place;
    const op = name.startsWith('$') ? name.slice(1) : '';
    if (!ALL_OPERATORS.includes(op)) throw new WhereError(at, `unknown operator; expected one of ${OPERATORS[kind].map((o) => `$${o}`).join(', ')}`);
    if (!OPERATORS[kind].includes(op as WhereOperator)) throw new WhereError(at, `${name} does not apply to ${field}; expected one of ${OPERATORS[kind].map((o) => `$${o}`).join(', ')}`);
    counter.leaves++;
    if (counter.leaves > MAX_WHERE_LEAVES) throw new WhereError('where', `more than ${MAX_WHERE_LEAVES} conditions`);
    return { field: field as WhereField, op: op as WhereOperator, value: operandValue(kind, op as WhereOperator, operand, at) };
  });
}

function operandValue(kind: Kind, op: WhereOperator, operand: unknown, place: string): WhereScalar | WhereScalar[] {
  if (op === 'exists') {
    if (typeof operand !== 'boolean') throw new WhereError(place, 'must be true or false');
    return operand;
  }
  if (op === 'in' || op === 'nin') {
    if (!Array.isArray(operand) || operand.length > MAX_WHERE_LIST) throw new WhereError(place, `must be an array of at most ${MAX_WHERE_LIST} values`);
    return operand.map((item, i) => scalar(kind, 'eq', item, `${place}[${i}]`));
  }
  return scalar(kind, op, operand, place);
}

function scalar(kind: Kind, op: WhereOperator, operand: unknown, place: string): WhereScalar {
  switch (kind) {
    case 'scope':
    case 'tags':
      if (typeof operand !== 'string') throw new WhereError(place, 'must be a string');
      return operand;
    case 'number':
      if (typeof operand !== 'number' || !Number.isFinite(operand)) throw new WhereError(place, 'must be a number');
      return operand;
    case 'time': {
      const ms = typeof operand === 'number' || typeof operand === 'string' ? parseInstant(operand) : null;
      if (ms === null) throw new WhereError(place, 'must be an ISO 8601 date or Unix milliseconds');
      return ms;
    }
    default:
      if (op === 'contains' && typeof operand !== 'string') throw new WhereError(place, 'must be a string');
      if ((op === 'gt' || op === 'gte' || op === 'lt' || op === 'lte') && typeof operand !== 'number' && typeof operand !== 'string') throw new WhereError(place, 'must be a number or a string');
      if (typeof operand !== 'string' && typeof operand !== 'boolean' && !(typeof operand === 'number' && Number.isFinite(operand))) throw new WhereError(place, 'must be a string, a number or a boolean');
      return operand;
  }
}
