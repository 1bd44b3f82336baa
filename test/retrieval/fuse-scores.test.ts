import { describe, expect, it } from 'vitest';
import {
  applyTerms,
  contextCosine,
  decayMultiplier,
  disclosureCue,
  entityCue,
  entitySpecificity,
  fuseColumns,
  fuseScore,
  importanceMultiplier,
  instantCoincidence,
  partsAt,
  periodCoincidence,
  periodSpecificity,
  type FusedColumns,
  minMaxNormalize,
  type FusedParts,
  type ScoreTerm,
  tagBoost,
  timeCue,
  withNeighbours,
} from '../../src/retrieval/fuse-scores.js';

describe('fusion terms', () => {
  const DAY = 86_400_000;
  const days = (first: number, count: number) => ({ startMs: first * DAY, endMs: (first + count) * DAY });

  it('periodSpecificity is 1 up to a day and falls as a power of the length', () => {
    expect(periodSpecificity(DAY, 0.5)).toBe(1);
    expect(periodSpecificity(DAY / 2, 0.5)).toBe(1);
    expect(periodSpecificity(4 * DAY, 0.5)).toBeCloseTo(0.5, 12);
    expect(periodSpecificity(365 * DAY, 1)).toBeCloseTo(1 / 365, 12);
    expect(periodSpecificity(365 * DAY, 0)).toBe(1);
  });

  it('periodCoincidence: an exact day counts fully, a wide or partial overlap less, no overlap nothing', () => {
    const asked = days(100, 1);
    expect(periodCoincidence(days(100, 1), asked, 0.5)).toBe(1);
    // A week-long event holding the day: all of the day, a week's specificity.
    expect(periodCoincidence(days(97, 7), asked, 0.5)).toBeCloseTo(Math.sqrt(1 / 7), 12);
    // A month asked, a day-long event inside it: symmetric in its arguments.
    expect(periodCoincidence(asked, days(90, 30), 0.5)).toBeCloseTo(Math.sqrt(1 / 30), 12);
    expect(periodCoincidence(days(90, 30), asked, 0.5)).toBeCloseTo(Math.sqrt(1 / 30), 12);
    // Half of a two-day weekend inside a week.
    expect(periodCoincidence(days(99, 2), days(93, 7), 0)).toBeCloseTo(0.5, 12);
    expect(periodCoincidence(days(101, 1), asked, 0.5)).toBe(0);
    expect(periodCoincidence(days(0, 365), asked, 1)).toBeCloseTo(1 / 365, 12);
    expect(periodCoincidence(days(0, 365), asked, 0)).toBe(1);
  });

  it('instantCoincidence: a time inside the period takes its specificity, outside it nothing', () => {
    expect(instantCoincidence(100.5 * DAY, days(100, 1), 0.5)).toBe(1);
    expect(instantCoincidence(100.5 * DAY, days(92, 16), 0.5)).toBeCloseTo(0.25, 12);
    expect(instantCoincidence(101 * DAY, days(100, 1), 0.5)).toBe(0);
    expect(instantCoincidence(99.9 * DAY, days(100, 1), 0)).toBe(0);
  });

  it('minMaxNormalize maps the range onto [0, 1]; a flat list to ones when positive, zeros otherwise', () => {
    expect([...minMaxNormalize([2, 4, 6])]).toEqual([0, 0.5, 1]);
    expect([...minMaxNormalize([-1, 1])]).toEqual([0, 1]);
    expect([...minMaxNormalize([3, 3, 3])]).toEqual([1, 1, 1]);
    expect([...minMaxNormalize([0.4])]).toEqual([1]);
    expect([...minMaxNormalize([0, 0])]).toEqual([0, 0]);
    expect([...minMaxNormalize([-0.2])]).toEqual([0]);
    expect([...minMaxNormalize([])]).toEqual([]);
  });

  it('contextCosine is the cosine with the normalised sum of the unit and its previous turn', () => {
    // q = (1, 0); v = (1, 0); p = (0, 1); alpha = 1 → (v + p)/√2 = (0.707, 0.707); cos = 0.707.
    expect(contextCosine(1, 0, 0, 1)).toBeCloseTo(Math.SQRT1_2);
    // Identical vectors: the blend changes nothing.
    expect(contextCosine(0.8, 0.8, 1, 0.5)).toBeCloseTo(0.8);
    // No previous turn, or alpha 0: the unit's own cosine.
    expect(contextCosine(0.3, undefined, undefined, 0.5)).toBe(0.3);
    expect(contextCosine(0.3, 0.9, 0.1, 0)).toBe(0.3);
  });

  it('withNeighbours adds a share of the better neighbour', () => {
    expect(withNeighbours(0.5, 0.2, 0.8, 0.5)).toBeCloseTo(0.9);
    expect(withNeighbours(0.5, undefined, undefined, 0.5)).toBe(0.5);
    expect(withNeighbours(0.5, 0.4, undefined, 0)).toBe(0.5);
  });

  it('importanceMultiplier is bounded around 1 and never filters', () => {
    expect(importanceMultiplier(0.5, 0.2)).toBe(1);
    expect(importanceMultiplier(1, 0.2)).toBeCloseTo(1.1);
    expect(importanceMultiplier(0, 0.2)).toBeCloseTo(0.9);
    expect(importanceMultiplier(7, 0.2)).toBeCloseTo(1.1);
    expect(importanceMultiplier(Number.NaN, 0.2)).toBe(1);
    expect(importanceMultiplier(0, 0.2)).toBeGreaterThan(0);
  });

  it('decayMultiplier halves the decaying share every half-life', () => {
    const day = 86_400_000;
    expect(decayMultiplier(0, 30, 0.2)).toBe(1);
    expect(decayMultiplier(30 * day, 30, 0.2)).toBeCloseTo(0.9);
    expect(decayMultiplier(60 * day, 30, 0.2)).toBeCloseTo(0.85);
    expect(decayMultiplier(-5 * day, 30, 0.2)).toBe(1);
    expect(decayMultiplier(1e12, 30, 0)).toBe(1);
    // Past every half-life the decaying share is gone: what is left is the part that never decays.
    expect(decayMultiplier(1e15, 30, 1)).toBe(0);
    expect(decayMultiplier(1e15, 30, 0.2)).toBeCloseTo(0.8, 12);
  });

  it('timeCue favours time expressions for "when" questions, more in a catch-up turn', () => {
    const weights = { timeCueBoost: 0.05, catchUpBoost: 0.1 };
    expect(timeCue(true, true, false, weights)).toBe(0.05);
    expect(timeCue(true, true, true, weights)).toBeCloseTo(0.15, 12);
    expect(timeCue(true, false, true, weights)).toBe(0);
    expect(timeCue(false, true, true, weights)).toBe(0);
  });

  it('disclosureCue boosts the queried person\'s first-person turns, more for a question about the person', () => {
    const weights = { disclosureBoost: 0.1, aboutPersonBoost: 0.05 };
    expect(disclosureCue(true, true, false, weights)).toBeCloseTo(0.1, 12);
    expect(disclosureCue(true, true, true, weights)).toBeCloseTo(0.15, 12);
    // Another speaker's turn, or the person's turn not in the first person: nothing.
    expect(disclosureCue(false, true, true, weights)).toBe(0);
    expect(disclosureCue(true, false, true, weights)).toBe(0);
    expect(disclosureCue(true, true, true, { disclosureBoost: 0, aboutPersonBoost: 0 })).toBe(0);
  });

  it('entitySpecificity is 1 for a name one unit mentions, 0 for one all do, graded by log between', () => {
    expect(entitySpecificity(1, 1000)).toBe(1);
    expect(entitySpecificity(1000, 1000)).toBe(0);
    expect(entitySpecificity(500, 1000)).toBeCloseTo(Math.log(2) / Math.log(1000), 12);
    expect(entitySpecificity(10, 1000)).toBeGreaterThan(entitySpecificity(100, 1000));
    expect(entitySpecificity(1, 1)).toBe(1);
  });

  it('entityCue sums the specificities of the queried entities the unit mentions, times the boost', () => {
    const weights = new Map([['sweden', 1], ['melanie', 0.1]]);
    expect(entityCue([{ key: 'sweden' }, { key: 'melanie' }, { key: 'boston' }], weights, 0.2)).toBeCloseTo(0.22, 12);
    expect(entityCue([{ key: 'boston' }], weights, 0.2)).toBe(0);
    expect(entityCue([], weights, 0.2)).toBe(0);
  });

  it('tagBoost counts exact (case-insensitive) tag hits', () => {
    expect(tagBoost(['Work', 'urgent'], new Set(['work', 'urgent']), 0.2)).toBeCloseTo(0.4);
    expect(tagBoost(['work'], new Set(['working']), 0.2)).toBe(0);
    expect(tagBoost([], new Set(['x']), 0.2)).toBe(0);
  });

  it('fuseScore sums the added terms, then multiplies; its terms replay to the same score exactly', () => {
    const parts: FusedParts = {
      dense: 0.31, bm25: 0.17, options: 0.05, neighbours: 0.2, speaker: 0.15, role: 0, tags: 0.2,
      timeCue: 0.05, period: 0, eventPeriod: 0.4, questionTurn: -0.1, disclosure: 0, entity: 0.3, importance: 1.1, decay: 0.97,
    };
    const terms: ScoreTerm[] = [];
    const score = fuseScore(parts, terms);
    expect(score).toBeCloseTo((0.31 + 0.17 + 0.05 + 0.2 + 0.15 + 0.2 + 0.05 + 0.4 - 0.1 + 0.3) * 1.1 * 0.97, 12);
    expect(applyTerms(terms)).toBe(score);
    // Terms that change nothing (an add of 0, a multiplier of 1) are left out.
    expect(terms.map((t) => t.term)).toEqual(['dense', 'bm25', 'options', 'neighbours', 'speaker', 'tags', 'timeCue', 'eventPeriod', 'questionTurn', 'entity', 'importance', 'decay']);
    expect(terms.find((t) => t.term === 'decay')).toEqual({ term: 'decay', kind: 'multiply', value: 0.97 });
    expect(fuseScore(parts)).toBe(score);
  });

  it('fuseColumns gives each unit the very bits fuseScore gives its parts', () => {
    const names = ['dense', 'bm25', 'options', 'neighbours', 'speaker', 'role', 'tags', 'timeCue', 'period', 'eventPeriod', 'questionTurn', 'disclosure', 'entity', 'importance', 'decay'] as const;
    const units = 50;
    // Values whose sums round differently by order: a changed order of operations shows in the bits.
    const column = (k: number) => Float64Array.from({ length: units }, (_, i) => (k < 13 ? Math.sin(i * 3.7 + k) / (k + 1) : 1 + Math.cos(i + k) / 10));
    const columns = Object.fromEntries(names.map((name, k) => [name, column(k)])) as unknown as FusedColumns;
    const scores = fuseColumns(columns, units);
    for (let i = 0; i < units; i++) {
      expect(partsAt(columns, i)).toEqual(Object.fromEntries(names.map((name) => [name, columns[name][i]])));
      expect(scores[i]).toBe(fuseScore(partsAt(columns, i)));
    }
  });

  it('applyTerms starts from 0 and applies each term in order', () => {
    expect(applyTerms([])).toBe(0);
    expect(applyTerms([{ term: 'dense', kind: 'add', value: 0.5 }, { term: 'decay', kind: 'multiply', value: 0.5 }, { term: 'bm25', kind: 'add', value: 1 }])).toBe(1.25);
  });
});
