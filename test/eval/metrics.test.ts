import { describe, expect, it } from 'vitest';
import {
  countWords,
  evidenceRanks,
  evidenceWordEnds,
  recallWithinWords,
  ndcgAtK,
  percentile,
  recallAllAtK,
  recallAnyAtK,
  recallAtK,
  reciprocalRank,
  scoreQuestion,
  sessionRanking,
  sessionUnitRanks,
  summarize,
  type Ranking,
} from '../../eval/metrics.js';

// Units returned best first; each lists the turns it contains.
const ranking: Ranking = [['a'], ['x'], ['b', 'c'], [], ['a'], ['d']];

describe('evidenceRanks', () => {
  it('gives each evidence turn the rank of the first unit containing it', () => {
    expect(evidenceRanks(ranking, ['a', 'b', 'c', 'd', 'z'])).toEqual([1, 3, 3, 6, null]);
  });

  it('counts a unit for every turn it contains', () => {
    expect(evidenceRanks([['p', 'q']], ['q', 'p'])).toEqual([1, 1]);
  });
});

describe('recall within a word budget', () => {
  it('counts words, and ends each evidence turn where its first unit has been read whole', () => {
    expect(countWords('[8 May 2023] Caroline:  I went  hiking\n')).toBe(7);
    expect(countWords('   ')).toBe(0);
    // Units of 300, 400, 200, 100, 50, 700 words.
    const ends = evidenceWordEnds(ranking, [300, 400, 200, 100, 50, 700], ['a', 'c', 'd', 'z']);
    expect(ends).toEqual([300, 900, 1750, null]);
    expect(recallWithinWords(ends, 500)).toBe(0.25);
    expect(recallWithinWords(ends, 1000)).toBe(0.5);
    expect(recallWithinWords(ends, 2000)).toBe(0.75);
    expect(recallWithinWords([], 2000)).toBe(0);
  });

  it('is summarised with the mean words per item when contents were known, and absent otherwise', () => {
    const question = { questionId: 'q', category: '1', evidenceTurns: ['b'], evidenceSessions: [] };
    const withWords = scoreQuestion(question, ranking, () => undefined, [100, 100, 600, 100, 100, 100]);
    expect(withWords.turnWordEnds).toEqual([800]);
    const set = summarize([withWords]);
    expect(set.words?.recall[500]).toBe(0);
    expect(set.words?.recall[1000]).toBe(1);
    expect(set.words?.meanWordsPerItem).toBe(1100 / 6);
    expect(summarize([scoreQuestion(question, ranking, () => undefined)]).words).toBeUndefined();
  });
});

describe('recall@k', () => {
  const ranks = evidenceRanks(ranking, ['b', 'd']); // [3, 6]

  it('is the share of evidence within the first k units', () => {
    expect(recallAtK(ranks, 1)).toBe(0);
    expect(recallAtK(ranks, 3)).toBe(0.5);
    expect(recallAtK(ranks, 5)).toBe(0.5);
    expect(recallAtK(ranks, 6)).toBe(1);
  });

  it('treats missing evidence as never recalled', () => {
    expect(recallAtK([null, 2], 100)).toBe(0.5);
    expect(recallAtK([], 10)).toBe(0);
  });

  it('has any/all variants', () => {
    expect(recallAnyAtK(ranks, 2)).toBe(0);
    expect(recallAnyAtK(ranks, 3)).toBe(1);
    expect(recallAllAtK(ranks, 5)).toBe(0);
    expect(recallAllAtK(ranks, 6)).toBe(1);
    expect(recallAllAtK([], 6)).toBe(0);
  });
});

describe('reciprocalRank', () => {
  it('is one over the rank of the first evidence hit', () => {
    expect(reciprocalRank([3, 6])).toBeCloseTo(1 / 3);
    expect(reciprocalRank([null, 2])).toBe(0.5);
    expect(reciprocalRank([null])).toBe(0);
  });
});

describe('ndcgAtK', () => {
  it('is 1 for evidence at the top ranks', () => {
    expect(ndcgAtK([1], 10)).toBe(1);
    expect(ndcgAtK([2, 1], 10)).toBe(1);
  });

  it('discounts by log2(rank + 1) against the ideal', () => {
    // One item at rank 3: (1 / log2 4) / (1 / log2 2) = 0.5.
    expect(ndcgAtK([3], 10)).toBeCloseTo(0.5);
    // Items at 1 and 3: (1 + 0.5) / (1 + 1 / log2 3).
    expect(ndcgAtK([1, 3], 10)).toBeCloseTo(1.5 / (1 + 1 / Math.log2(3)));
  });

  it('ignores evidence past k and caps at 1', () => {
    expect(ndcgAtK([11], 10)).toBe(0);
    expect(ndcgAtK([1, 1], 10)).toBe(1);
    expect(ndcgAtK([], 10)).toBe(0);
  });
});

describe('sessionUnitRanks', () => {
  it('ranks each evidence session at the first result holding one of its turns, counting every result', () => {
    // Units: a(s1), b(s2), c(s1), d(s3): s3 is the third distinct session but the fourth result.
    const units = [['a'], ['b'], ['c'], ['d']];
    const sessionOf = (turn: string) => ({ a: 's1', b: 's2', c: 's1', d: 's3' })[turn];
    expect(sessionUnitRanks(units, sessionOf, ['s3', 's1', 's9'])).toEqual([4, 1, null]);
    expect(sessionUnitRanks([[], ['d', 'a']], sessionOf, ['s1'])).toEqual([2]);
  });
});

describe('sessionRanking', () => {
  it('keeps each session at its best unit and drops repeats', () => {
    const sessionOf = (turn: string) => ({ a: 's1', b: 's2', c: 's1', d: 's3', x: 's2' })[turn];
    expect(sessionRanking(ranking, sessionOf)).toEqual([['s1'], ['s2'], ['s3']]);
  });
});

describe('scoreQuestion and summarize', () => {
  const sessionOf = (turn: string) => ({ a: 's1', b: 's2', c: 's2', d: 's3', x: 's4' })[turn];

  it('scores turns and sessions from one ranking', () => {
    const score = scoreQuestion({ questionId: 'q', category: '1', evidenceTurns: ['c', 'd'], evidenceSessions: ['s2', 's3'] }, ranking, sessionOf);
    // Sessions in order: s1, s4, s2, s3.
    // s2 first appears in the third result, s3 in the sixth.
    expect(score).toEqual({ questionId: 'q', category: '1', turnRanks: [3, 6], sessionRanks: [3, 4], sessionUnitRanks: [3, 6], returned: 6 });
  });

  it('summarises sessions in the first k results only when every score kept their ranks', () => {
    const kept = [
      { questionId: 'q1', category: '1', turnRanks: [2, 9], sessionRanks: [1, 3], sessionUnitRanks: [2, 9], returned: 10 },
      { questionId: 'q2', category: '1', turnRanks: [null], sessionRanks: [null], sessionUnitRanks: [null], returned: 10 },
    ];
    const set = summarize(kept);
    expect(set.sessionInResults?.recallAny[1]).toBe(0);
    expect(set.sessionInResults?.recallAny[5]).toBe(0.5);
    expect(set.sessionInResults?.recall[5]).toBe(0.25);
    expect(set.sessionInResults?.recall[10]).toBe(0.5);
    // The distinct-session figures are unchanged by the new ranks.
    expect(set.session.recall[5]).toBe(0.5);
    expect(summarize([kept[0], { questionId: 'q3', category: '1', turnRanks: [1], sessionRanks: [1], returned: 1 }]).sessionInResults).toBeUndefined();
  });

  it('averages over questions with evidence at each level', () => {
    const set = summarize([
      { questionId: 'q1', category: '1', turnRanks: [1], sessionRanks: [1], returned: 1 },
      { questionId: 'q2', category: '1', turnRanks: [null, 4], sessionRanks: [], returned: 4 },
    ]);
    expect(set.questions).toBe(2);
    expect(set.turn.questions).toBe(2);
    expect(set.turn.recall[1]).toBe(0.5);
    expect(set.turn.recall[5]).toBe(0.75);
    expect(set.turn.recallAny[5]).toBe(1);
    expect(set.turn.recallAll[100]).toBe(0.5);
    expect(set.turn.mrr).toBeCloseTo((1 + 0.25) / 2);
    expect(set.turn.ndcg10).toBeCloseTo((1 + 1 / Math.log2(5) / (1 + 1 / Math.log2(3))) / 2);
    expect(set.session.questions).toBe(1);
    expect(set.session.recallAll[1]).toBe(1);
  });
});

describe('percentile', () => {
  it('uses the nearest rank', () => {
    const values = [5, 1, 4, 2, 3, 6, 7, 8, 9, 10];
    expect(percentile(values, 50)).toBe(5);
    expect(percentile(values, 95)).toBe(10);
    expect(percentile([], 50)).toBe(0);
  });
});
