import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { PairPool, type PoolRegions } from '../../src/retrieval/pair-pool.js';

/** Owners of regions as the BM25 index keeps them: a row [start, pairs] each in one table. */
class Owners {
  table = new Int32Array(2 * 64).fill(-1);
  readonly pool = new PairPool();
  /** What each owner's region must hold. */
  readonly model = new Map<number, number[]>();

  regions = (): PoolRegions => ({ count: 64, table: this.table, stride: 2, startField: 0, pairsField: 1 });

  create(owner: number, values: number[]): void {
    this.drop(owner);
    const pairs = values.length / 2;
    const start = this.pool.allocate(pairs, this.regions);
    this.pool.ints.set(values, start);
    this.table[2 * owner] = start;
    this.table[2 * owner + 1] = pairs;
    this.model.set(owner, values);
  }

  /** Lengthens an owner's region by `more` pairs: in place when it is last, else moved to the end. */
  grow(owner: number, more: number[]): void {
    const values = this.model.get(owner);
    if (!values) return;
    const pairs = values.length / 2;
    this.pool.reserve(pairs + more.length / 2, this.regions);
    const start = this.table[2 * owner];
    let at = start;
    if (pairs > 0 && start + 2 * pairs === this.pool.end) {
      this.pool.extendLast(more.length / 2);
    } else {
      at = this.pool.allocate(pairs + more.length / 2, this.regions);
      this.pool.ints.copyWithin(at, start, start + 2 * pairs);
      this.pool.free(pairs);
    }
    this.pool.ints.set(more, at + 2 * pairs);
    this.table[2 * owner] = at;
    this.table[2 * owner + 1] = pairs + more.length / 2;
    this.model.set(owner, [...values, ...more]);
  }

  drop(owner: number): void {
    if (!this.model.has(owner)) return;
    this.pool.free(this.table[2 * owner + 1]);
    this.table[2 * owner] = -1;
    this.table[2 * owner + 1] = 0;
    this.model.delete(owner);
  }

  held(owner: number): number[] {
    const start = this.table[2 * owner];
    return Array.from(this.pool.ints.subarray(start, start + 2 * this.table[2 * owner + 1]));
  }
}

describe('PairPool', () => {
  const pairs = fc.array(fc.integer({ min: -5, max: 1_000_000 }), { maxLength: 24 }).map((values) => (values.length % 2 === 0 ? values : values.slice(1)));
  // Many owners, or a few whose regions are replaced over and over: the waste a compaction reclaims.
  const operation = fc.oneof(fc.integer({ min: 0, max: 63 }), fc.integer({ min: 0, max: 5 })).chain((owner) =>
    fc.oneof(
      { weight: 4, arbitrary: fc.record({ kind: fc.constant('create' as const), owner: fc.constant(owner), values: pairs }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('grow' as const), owner: fc.constant(owner), values: pairs }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('drop' as const), owner: fc.constant(owner) }) },
    ),
  );

  it('keeps every live region as written through any allocations, moves, frees and compactions, never past 4.5 times the most it held live', () => {
    fc.assert(
      fc.property(fc.array(operation, { minLength: 100, maxLength: 400, size: 'max' }), (operations) => {
        const owners = new Owners();
        let mostLive = 0;
        for (const [i, op] of operations.entries()) {
          if (op.kind === 'create') owners.create(op.owner, op.values);
          else if (op.kind === 'grow') owners.grow(op.owner, op.values);
          else owners.drop(op.owner);
          if (i % 10 === 9 || i === operations.length - 1) for (const [owner, values] of owners.model) expect(owners.held(owner)).toEqual(values);
          let live = 0;
          for (const values of owners.model.values()) live += values.length;
          mostLive = Math.max(mostLive, live);
          // It grows (by half, or to fit) only when under half of what is in use is waste, else it is
          // compacted first: under 1.5 × (2 × live + the request), and a region that moves asks for
          // its old pairs again, so under 4.5 × the live pairs after the call.
          expect(owners.pool.ints.length).toBeLessThanOrEqual(Math.max(64, 4.5 * mostLive));
        }
      }),
      { numRuns: 150 },
    );
  });
});
