import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { MemoryFields } from '../../src/domain/memory.js';
import type { WhereNode } from '../../src/domain/where.js';
import { matchesWhere } from '../../src/memory/where-match.js';

const TIME_FIELDS = ['created_at', 'updated_at', 'occurred_at', 'expires_at'] as const;
const OPS = ['gt', 'gte', 'lt', 'lte'] as const;
const YEAR_10000 = Date.UTC(10000, 0, 1);

/** The same instant in the forms a stored time may take: toISOString's, with an offset, without milliseconds, a six-digit year. */
function written(ms: number, form: number): string {
  const iso = new Date(ms).toISOString();
  if (form === 0 || ms >= YEAR_10000 || ms < 0) return iso;
  if (form === 1) {
    const shifted = new Date(ms + 2 * 3_600_000).toISOString();
    return `${shifted.slice(0, 23)}+02:00`;
  }
  if (form === 2 && ms % 1000 === 0) return `${iso.slice(0, 19)}Z`;
  return iso;
}

function reference(stored: string | undefined, op: (typeof OPS)[number], bound: number): boolean {
  if (stored === undefined) return false;
  const ms = Date.parse(stored);
  if (!Number.isFinite(ms)) return false;
  return op === 'gt' ? ms > bound : op === 'gte' ? ms >= bound : op === 'lt' ? ms < bound : ms <= bound;
}

describe('matchesWhere on times', () => {
  it('compares a stored time with a bound as their instants compare, whatever form the time was written in', () => {
    // Instants near one another (so that the comparisons go both ways), any year the service
    // takes, whole and fractional bounds.
    const instant = fc.oneof(fc.integer({ min: -62_198_755_200_000, max: 253_402_300_799_999 + 86_400_000 }), fc.integer({ min: 1_700_000_000_000, max: 1_700_000_010_000 }));
    fc.assert(
      fc.property(
        fc.constantFrom(...TIME_FIELDS),
        fc.constantFrom(...OPS),
        instant,
        fc.integer({ min: 0, max: 2 }),
        // The bound: anywhere, or just around the stored instant (an offset's two hours included).
        fc.oneof(instant.map((ms) => ({ at: ms })), fc.constantFrom(-7_200_000, -1, -0.5, 0, 0.5, 1, 7_200_000).map((delta) => ({ delta })), fc.constant({ at: -1 })),
        fc.boolean(),
        (field, op, storedMs, form, where, withUpdate) => {
          const stored = written(storedMs, form);
          const bound = 'at' in where ? where.at : storedMs + where.delta;
          const record: MemoryFields = { id: 'm', user_id: 'u', text: 't', tags: [], importance: 0.5, source: 'cli', created_at: '2026-01-01T00:00:00.000Z' };
          if (field === 'updated_at' && !withUpdate) record.created_at = stored;
          else (record as unknown as Record<string, string>)[field] = stored;
          const node: WhereNode = { field, op, value: bound };
          expect(matchesWhere(record, node)).toBe(reference(stored, op, bound));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('an absent or unreadable time passes no comparison', () => {
    const record: MemoryFields = { id: 'm', user_id: 'u', text: 't', tags: [], importance: 0.5, source: 'cli', created_at: '2026-01-01T00:00:00.000Z', occurred_at: 'not a date' };
    for (const op of OPS) {
      expect(matchesWhere(record, { field: 'occurred_at', op, value: 0 })).toBe(false);
      expect(matchesWhere(record, { field: 'expires_at', op, value: 0 })).toBe(false);
    }
  });
});
