import { describe, expect, it } from 'vitest';
import type { MemoryFields } from '../../src/domain/memory.js';
import { matchesWhere } from '../../src/memory/where-match.js';
import { parseWhere } from '../../src/protocol/where-expression.js';

const memory = (fields: Partial<MemoryFields>): MemoryFields => ({
  id: 'm',
  user_id: 'u',
  text: 't',
  tags: [],
  importance: 0.5,
  source: 'cli',
  created_at: '2026-01-01T00:00:00.000Z',
  ...fields,
});

function matches(where: unknown, record: MemoryFields): boolean {
  const parsed = parseWhere(where);
  if (!parsed.ok) throw new Error(`${parsed.place}: ${parsed.message}`);
  return matchesWhere(record, parsed.node);
}

/** `n` nested $not around a leaf. */
const nested = (n: number): unknown => (n === 0 ? { importance: 1 } : { $not: nested(n - 1) });

describe('parseWhere: what an invalid expression answers, naming its place', () => {
  it.each([
    [{ $or: [{ importance: 1 }, { importance: 'high' }] }, 'where.$or[1].importance', 'must be a number'],
    [{ colour: 'red' }, 'where.colour', 'unknown field; expected one of agent_id, run_id, source, tags, importance, created_at, updated_at, occurred_at, expires_at, metadata.<key>'],
    [{ importance: { $gtt: 1 } }, 'where.importance.$gtt', 'unknown operator; expected one of $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists'],
    [{ $xor: [] }, 'where.$xor', 'unknown operator; expected $and, $or, $not or a field'],
    [{ tags: { $gt: 'a' } }, 'where.tags.$gt', '$gt does not apply to tags; expected one of $eq, $ne, $contains, $in, $nin, $exists'],
    [{ $and: [] }, 'where.$and', 'must be a non-empty array of expressions'],
    [{ $and: [{ created_at: { $gte: 'yesterday' } }] }, 'where.$and[0].created_at.$gte', 'must be an ISO 8601 date or Unix milliseconds'],
    [{ agent_id: { $in: ['a', 3] } }, 'where.agent_id.$in[1]', 'must be a string'],
    [{ 'metadata.done': { $exists: 'yes' } }, 'where.metadata.done.$exists', 'must be true or false'],
    [{ 'metadata.x': { a: 1 } }, 'where.metadata.x.a', 'unknown operator; expected one of $eq, $ne, $gt, $gte, $lt, $lte, $in, $nin, $exists, $contains'],
    [{ importance: {} }, 'where.importance', 'must name at least one operator'],
    [[], 'where', 'must be an object'],
    [nested(8), 'where.$not.$not.$not.$not.$not.$not.$not.$not', 'nesting deeper than 8'],
    [{ $and: Array.from({ length: 65 }, (_, i) => ({ importance: i / 100 })) }, 'where', 'more than 64 conditions'],
  ])('%j → %s: %s', (where, place, message) => {
    expect(parseWhere(where)).toEqual({ ok: false, place, message });
  });

  it('takes 8 levels and 64 conditions', () => {
    expect(parseWhere(nested(7)).ok).toBe(true);
    expect(parseWhere({ $and: Array.from({ length: 64 }, (_, i) => ({ importance: i / 100 })) }).ok).toBe(true);
  });
});

describe('matchesWhere', () => {
  const record = memory({ agent_id: 'ops', tags: ['ops', 'infra'], importance: 0.8, metadata: { project: 'styx', priority: 2, done: false } });

  it('reads equality, comparisons and sets as MongoDB does', () => {
    expect(matches({ agent_id: 'ops' }, record)).toBe(true);
    expect(matches({ agent_id: 'other' }, record)).toBe(false);
    expect(matches({ run_id: { $exists: false } }, record)).toBe(true);
    expect(matches({ run_id: { $ne: 'r1' } }, record)).toBe(true);
    expect(matches({ run_id: 'r1' }, record)).toBe(false);
    expect(matches({ importance: { $gt: 0.5, $lte: 0.8 } }, record)).toBe(true);
    expect(matches({ importance: { $gt: 0.8 } }, record)).toBe(false);
    expect(matches({ 'metadata.priority': { $gte: 2 } }, record)).toBe(true);
    // Comparisons hold within one type: a stored number is not above a string.
    expect(matches({ 'metadata.priority': { $gte: '1' } }, record)).toBe(false);
    expect(matches({ 'metadata.priority': '2' }, record)).toBe(false);
    expect(matches({ 'metadata.done': false }, record)).toBe(true);
    expect(matches({ 'metadata.project': { $in: ['styx', 'lethe'] } }, record)).toBe(true);
    expect(matches({ 'metadata.project': { $nin: ['styx'] } }, record)).toBe(false);
    expect(matches({ 'metadata.project': { $contains: 'ty' } }, record)).toBe(true);
    expect(matches({ 'metadata.missing': { $nin: ['x'] } }, record)).toBe(true);
    expect(matches({ 'metadata.constructor': { $exists: true } }, record)).toBe(false);
  });

  it('tests tags by their elements', () => {
    expect(matches({ tags: 'ops' }, record)).toBe(true);
    expect(matches({ tags: { $contains: 'infra' } }, record)).toBe(true);
    expect(matches({ tags: { $in: ['x', 'infra'] } }, record)).toBe(true);
    expect(matches({ tags: { $nin: ['x', 'infra'] } }, record)).toBe(false);
    expect(matches({ tags: { $exists: true } }, memory({}))).toBe(false);
  });

  it('compares times as instants, ISO 8601 or Unix ms alike', () => {
    expect(matches({ created_at: { $gte: '2026-01-01T00:00:00Z' } }, record)).toBe(true);
    expect(matches({ created_at: { $lt: Date.parse('2026-01-01T00:00:00Z') } }, record)).toBe(false);
    expect(matches({ updated_at: Date.parse('2026-01-01T00:00:00Z') }, record)).toBe(true);
    expect(matches({ occurred_at: { $exists: false } }, record)).toBe(true);
  });

  it('combines with $and, $or, $not; several fields are ANDed; {} matches everything', () => {
    expect(matches({ $or: [{ agent_id: 'x' }, { importance: 0.8 }] }, record)).toBe(true);
    expect(matches({ $and: [{ agent_id: 'ops' }, { importance: 0.1 }] }, record)).toBe(false);
    expect(matches({ $not: { agent_id: 'ops' } }, record)).toBe(false);
    expect(matches({ agent_id: 'ops', source: 'cli' }, record)).toBe(true);
    expect(matches({ agent_id: 'ops', source: 'api' }, record)).toBe(false);
    expect(matches({}, record)).toBe(true);
  });
});
