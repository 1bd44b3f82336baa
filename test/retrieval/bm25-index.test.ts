import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Bm25Index, EXPANSION_MAX_SHARE } from '../../src/retrieval/bm25-index.js';

/*
 * The hand-computed corpus: N = 3, avgdl = (2 + 3 + 1) / 3 = 2, k1 = 1.2, b = 0.75.
 *   idf(a) = ln(1 + (3 - 2 + 0.5) / (2 + 0.5)) = ln 1.6       = 0.4700036292457356
 *   idf(c) = ln(1 + (3 - 1 + 0.5) / (1 + 0.5)) = ln(8/3)      = 0.9808292530117262
 *   d1, a: tf 1, |d| 2: K = 1.2 (0.25 + 0.75 · 2/2)   = 1.2   → idf · 2.2 / 2.2  = 0.4700036292457356
 *   d2, a: tf 1, |d| 3: K = 1.2 (0.25 + 0.75 · 3/2)   = 1.65  → idf · 2.2 / 2.65 = 0.3901916922040069
 *   d2, c: tf 2, |d| 3:                                        → idf · 4.4 / 3.65 = 1.1823695104798893
 */
function threeDocuments(index = new Bm25Index()): Bm25Index {
  index.add(1, ['a', 'b']);
  index.add(2, ['a', 'c', 'c']);
  index.add(3, ['d']);
  return index;
}

type Operation = { kind: 'add'; key: number; terms: string[] } | { kind: 'remove'; key: number };

/** The operations applied to an index, the documents they leave (`model`), and an index built afresh from those. */
function replayed(operations: readonly Operation[]): { index: Bm25Index; model: Map<number, string[]>; fresh: Bm25Index } {
  const index = new Bm25Index();
  const model = new Map<number, string[]>();
  for (const op of operations) {
    model.delete(op.key);
    if (op.kind === 'add') {
      index.add(op.key, op.terms);
      model.set(op.key, op.terms);
    } else {
      index.remove(op.key);
    }
  }
  const fresh = new Bm25Index();
  for (const [key, terms] of model) fresh.add(key, terms);
  return { index, model, fresh };
}

function expectSameScores(actual: Map<number, number>, expected: Map<number, number>): void {
  expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
  for (const [key, score] of expected) expect(actual.get(key)).toBeCloseTo(score, 12);
}

describe('Bm25Index', () => {
  it('defaults to k1 1.2 and b 0.75', () => {
    const index = new Bm25Index();
    expect(index.k1).toBe(1.2);
    expect(index.b).toBe(0.75);
  });

  it('scores a three-document corpus as computed by hand', () => {
    const index = threeDocuments();
    const a = index.score(['a']);
    expect(a.size).toBe(2);
    expect(a.get(1)).toBeCloseTo(0.4700036292457356, 12);
    expect(a.get(2)).toBeCloseTo(0.3901916922040069, 12);

    const both = index.score(['a', 'c']);
    expect(both.get(1)).toBeCloseTo(0.4700036292457356, 12);
    expect(both.get(2)).toBeCloseTo(0.3901916922040069 + 1.1823695104798893, 12);
    expect(both.has(3)).toBe(false);
  });

  it('counts a repeated query term once', () => {
    const index = threeDocuments();
    expectSameScores(index.score(['c', 'a', 'c', 'a']), index.score(['a', 'c']));
  });

  it('returns no scores for unknown terms, empty queries and empty indexes', () => {
    expect(threeDocuments().score(['zebra']).size).toBe(0);
    expect(threeDocuments().score([]).size).toBe(0);
    expect(new Bm25Index().score(['a']).size).toBe(0);
  });

  it('ignores document length when b is 0 and term frequency when k1 is 0', () => {
    const noLength = threeDocuments(new Bm25Index({ b: 0 }));
    expect(noLength.score(['a']).get(2)).toBeCloseTo(0.4700036292457356, 12);

    const noFrequency = threeDocuments(new Bm25Index({ k1: 0 }));
    expect(noFrequency.score(['c']).get(2)).toBeCloseTo(0.9808292530117262, 12);
  });

  it('counts documents without terms in N and in the average length', () => {
    const index = threeDocuments();
    index.add(4, []);
    // N = 4, avgdl = 6/4: idf(a) = ln(1 + 2.5/2.5) = ln 2; d1: K = 1.2 (0.25 + 0.75 · 2/1.5) = 1.5.
    expect(index.score(['a']).get(1)).toBeCloseTo((Math.LN2 * 2.2) / 2.5, 12);
  });

  it('tracks size and membership', () => {
    const index = threeDocuments();
    expect(index.size).toBe(3);
    expect(index.has(2)).toBe(true);
    index.remove(2);
    expect(index.size).toBe(2);
    expect(index.has(2)).toBe(false);
    index.remove(2);
    index.remove(99);
    expect(index.size).toBe(2);
  });

  it('gives after a removal the scores of an index that never held the document', () => {
    const index = threeDocuments();
    index.remove(1);
    const fresh = new Bm25Index();
    fresh.add(2, ['a', 'c', 'c']);
    fresh.add(3, ['d']);
    for (const query of [['a'], ['b'], ['c'], ['a', 'b', 'c', 'd']]) expectSameScores(index.score(query), fresh.score(query));
  });

  it('replaces a document added again under the same key', () => {
    const index = threeDocuments();
    index.add(1, ['c']);
    const fresh = new Bm25Index();
    fresh.add(2, ['a', 'c', 'c']);
    fresh.add(3, ['d']);
    fresh.add(1, ['c']);
    expect(index.size).toBe(3);
    for (const query of [['a'], ['b'], ['c']]) expectSameScores(index.score(query), fresh.score(query));
  });

  it('accepts the full uint32 key range', () => {
    const index = new Bm25Index();
    index.add(0, ['a']);
    index.add(0xffff_ffff, ['a', 'b']);
    expect([...index.score(['a']).keys()].sort()).toEqual([0, 0xffff_ffff]);
  });

  it('matches a freshly built index after any sequence of adds and removes', () => {
    const term = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f');
    const operation = fc.oneof(
      fc.record({ kind: fc.constant('add' as const), key: fc.integer({ min: 0, max: 12 }), terms: fc.array(term, { maxLength: 8 }) }),
      fc.record({ kind: fc.constant('remove' as const), key: fc.integer({ min: 0, max: 12 }) }),
    );
    fc.assert(
      fc.property(fc.array(operation, { maxLength: 60 }), fc.array(term, { minLength: 1, maxLength: 4 }), (operations, query) => {
        const { index, model, fresh } = replayed(operations);
        expect(index.size).toBe(fresh.size);
        expectSameScores(index.score(query), fresh.score(query));
      }),
      { numRuns: 300 },
    );
  });

  it('matches a freshly built index after long histories: lists that grow, move, empty and come back (the pools compacted on the way)', () => {
    // Twenty terms of which a few are common: the common lists grow past their room many times
    // while the rare ones empty (their term forgotten) and return under a reused id; with
    // hundreds of replacements the waste of both pools passes half and they are compacted.
    const term = fc.oneof(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 16 }).map((n) => `t${n}`));
    const operation = fc.oneof(
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('add' as const), key: fc.integer({ min: 0, max: 40 }), terms: fc.array(term, { maxLength: 12 }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), key: fc.integer({ min: 0, max: 40 }) }) },
    );
    fc.assert(
      fc.property(fc.array(operation, { minLength: 50, maxLength: 400 }), fc.array(term, { minLength: 1, maxLength: 5 }), (operations, query) => {
        const { index, model, fresh } = replayed(operations);
        expect(index.size).toBe(fresh.size);
        for (const word of ['a', 'b', 't3', 't16']) expect(index.documentFrequency(word)).toBe(fresh.documentFrequency(word));
        expectSameScores(index.score(query), fresh.score(query));
        const keys = [...model.keys()];
        expect(Array.from(index.scoreKeys(query, keys))).toEqual(Array.from(fresh.scoreKeys(query, keys)));
        expect(index.topKeys(query, 7).map((hit) => hit.key)).toEqual(fresh.topKeys(query, 7).map((hit) => hit.key));
      }),
      { numRuns: 200 },
    );
  });

  it('adds many documents at once as it adds them one by one: over any earlier history, keys met again replaced', () => {
    const term = fc.oneof(fc.constantFrom('a', 'b', 'c'), fc.integer({ min: 0, max: 30 }).map((n) => `t${n}`));
    const document = fc.record({ key: fc.integer({ min: 0, max: 300 }), terms: fc.array(term, { maxLength: 10 }) });
    fc.assert(
      fc.property(
        fc.array(document, { maxLength: 80 }),
        fc.array(fc.integer({ min: 0, max: 300 }), { maxLength: 20 }),
        // Distinct keys (the bulk path) or not (one by one), more and fewer than the bulk path's 64.
        fc.oneof(fc.uniqueArray(document, { selector: (doc) => doc.key, minLength: 60, maxLength: 200 }), fc.array(document, { maxLength: 150 })),
        fc.array(term, { minLength: 1, maxLength: 5 }),
        (before, removed, batch, query) => {
          const one = new Bm25Index();
          const many = new Bm25Index();
          for (const index of [one, many]) {
            for (const { key, terms } of before) index.add(key, terms);
            for (const key of removed) index.remove(key);
          }
          for (const { key, terms } of batch) one.add(key, terms);
          many.addMany(batch);
          expect(many.size).toBe(one.size);
          for (const word of ['a', 'c', 't1', 't30']) expect(many.documentFrequency(word)).toBe(one.documentFrequency(word));
          expect([...many.score(query)].sort((x, y) => x[0] - y[0])).toEqual([...one.score(query)].sort((x, y) => x[0] - y[0]));
          expect(many.topKeys(query, 9)).toEqual(one.topKeys(query, 9));
          // And it goes on as an index built one by one: removals and adds after it.
          for (const index of [one, many]) {
            for (const { key } of batch.slice(0, 10)) index.remove(key);
            index.add(7, ['a', 't2', 't2']);
          }
          expect([...many.score(query)].sort((x, y) => x[0] - y[0])).toEqual([...one.score(query)].sort((x, y) => x[0] - y[0]));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('lays out a load without waste: its lists take no more than the one-by-one adds leave', () => {
    const documents = Array.from({ length: 5000 }, (_, key) => ({ key, terms: Array.from({ length: 1 + (key % 15) }, (_, i) => `w${(key * 7 + i * i) % 900}`) }));
    const one = new Bm25Index();
    for (const { key, terms } of documents) one.add(key, terms);
    const many = new Bm25Index();
    many.addMany(documents);
    expect(many.heldInts).toBeLessThan(one.heldInts);
    expect(many.score(['w1', 'w4'])).toEqual(one.score(['w1', 'w4']));
  });

  it('holds its lists within a few times what a fresh index of the same documents holds, however often documents are replaced', () => {
    let seed = 11;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const index = new Bm25Index();
    const model = new Map<number, string[]>();
    for (let round = 0; round < 20_000; round++) {
      const terms = Array.from({ length: 1 + (round % 12) }, () => `w${Math.floor(300 * random() ** 2)}`);
      index.add(round % 50, terms);
      model.set(round % 50, terms);
    }
    const fresh = new Bm25Index();
    for (const [key, terms] of model) fresh.add(key, terms);
    // Without the waste reclaimed, the 20,000 adds' postings alone would be ~260,000 ints.
    expect(index.heldInts).toBeLessThan(4 * fresh.heldInts);
    expectSameScores(index.score(['w0', 'w1', 'w7']), fresh.score(['w0', 'w1', 'w7']));
  });

  it('scores a 10-term query over 700 documents in well under a millisecond', () => {
    const vocabulary = Array.from({ length: 3000 }, (_, i) => `w${i}`);
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    // Zipf-like draws, so common terms have long posting lists as in chat text.
    const draw = (): string => vocabulary[Math.floor(vocabulary.length * random() ** 3)]!;
    const index = new Bm25Index();
    for (let key = 0; key < 700; key += 1) index.add(key, Array.from({ length: 15 }, draw));
    const query = Array.from({ length: 10 }, draw);
    for (let i = 0; i < 50; i += 1) index.score(query);
    const runs = 500;
    const started = performance.now();
    for (let i = 0; i < runs; i += 1) index.score(query);
    // About 0.03 ms measured; the bound leaves room for a loaded machine.
    expect((performance.now() - started) / runs).toBeLessThan(0.5);
  });
});

describe('Bm25Index top-k and per-key scoring (the path of users past the exhaustive limit)', () => {
  const term = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g', 'h');
  const corpus = fc.array(fc.record({ key: fc.integer({ min: 0, max: 400 }), terms: fc.array(term, { maxLength: 10 }) }), { maxLength: 150 });

  /** The reference: every score, sorted best first with ties to the larger key. */
  function fullRanking(index: Bm25Index, query: string[], passes: (key: number) => boolean = () => true): Array<{ key: number; score: number }> {
    return [...index.score(query)]
      .filter(([key]) => passes(key))
      .map(([key, score]) => ({ key, score }))
      .sort((a, b) => b.score - a.score || b.key - a.key);
  }

  it('gives exactly the first k of the full scoring, scores to the bit, with and without a filter', () => {
    fc.assert(
      fc.property(corpus, fc.array(term, { minLength: 1, maxLength: 5 }), fc.integer({ min: 0, max: 40 }), fc.integer({ min: 1, max: 5 }), (documents, query, k, modulus) => {
        const index = new Bm25Index();
        for (const { key, terms } of documents) index.add(key, terms);
        expect(index.topKeys(query, k)).toEqual(fullRanking(index, query).slice(0, k));
        const passes = (key: number) => key % modulus === 0;
        expect(index.topKeys(query, k, passes)).toEqual(fullRanking(index, query, passes).slice(0, k));
        // Twice in a row: the scratch sums are left all zero.
        expect(index.topKeys(query, k)).toEqual(fullRanking(index, query).slice(0, k));
      }),
    );
  });

  it('stays exact when the common terms\' lists are left unwalked (a rare term fills the top k first)', () => {
    const index = new Bm25Index();
    for (let key = 0; key < 3000; key++) {
      const terms = ['common', ...(key % 2 === 0 ? ['often'] : []), ...Array.from({ length: key % 9 }, () => 'filler')];
      if (key % 97 === 0) terms.push('rare', ...(key % 3 === 0 ? ['rare'] : []));
      if (key % 13 === 0) terms.push('seldom');
      index.add(key, terms);
    }
    for (const query of [['common', 'rare', 'often'], ['often', 'seldom', 'rare', 'common'], ['rare']]) {
      for (const k of [1, 5, 31, 40]) {
        expect(index.topKeys(query, k)).toEqual(fullRanking(index, query).slice(0, k));
        const passes = (key: number) => key % 2 === 1;
        expect(index.topKeys(query, k, passes)).toEqual(fullRanking(index, query, passes).slice(0, k));
      }
    }
  });

  it('stays exact after removals and replacements (slots reused)', () => {
    const index = new Bm25Index();
    for (let key = 0; key < 200; key++) index.add(key, ['a', key % 3 === 0 ? 'b' : 'c', ...(key % 7 === 0 ? ['d', 'd'] : [])]);
    for (let key = 0; key < 200; key += 5) index.remove(key);
    for (let key = 0; key < 50; key += 3) index.add(key, ['d', 'b']);
    expect(index.topKeys(['d', 'b', 'a'], 25)).toEqual(fullRanking(index, ['d', 'b', 'a']).slice(0, 25));
  });

  it('scores given keys with the very sums of score(), 0 for keys without a query term or unknown', () => {
    fc.assert(
      fc.property(corpus, fc.array(term, { minLength: 1, maxLength: 5 }), fc.array(fc.integer({ min: 0, max: 450 }), { maxLength: 60 }), (documents, query, keys) => {
        const index = new Bm25Index();
        for (const { key, terms } of documents) index.add(key, terms);
        const full = index.score(query);
        const scores = index.scoreKeys(query, keys);
        keys.forEach((key, i) => expect(scores[i]).toBe(full.get(key) ?? 0));
      }),
    );
  });

  it('weighs each query term by its weight: scaled by it, the same bits at weight 1, every path agreeing', () => {
    // Thirty more documents keep c rare (1 of 33): an expansion held by many is left out (below).
    const index = threeDocuments();
    for (let key = 10; key < 40; key++) index.add(key, ['z']);
    const plain = index.scoreKeys(['a', 'c'], [1, 2, 3]);
    expect(index.scoreKeys(['a', 'c'], [1, 2, 3], [1, 1])).toEqual(plain);
    const weighted = index.scoreKeys(['a', 'c'], [1, 2, 3], [1, 0.25]);
    expect(weighted[0]).toBe(plain[0]);
    expect(weighted[1]).toBeCloseTo(index.score(['a']).get(2)! + 0.25 * index.score(['c']).get(2)!, 12);
    expect(weighted[2]).toBe(0);
    const visited = new Map<number, number>();
    index.forEachScore(['a', 'c'], (key, termScore) => visited.set(key, (visited.get(key) ?? 0) + termScore), [1, 0.25]);
    expect(visited.get(2)).toBe(weighted[1]);
    expect(index.topKeys(['a', 'c'], 2, undefined, [1, 0.25])).toEqual([
      { key: 1, score: weighted[0] },
      { key: 2, score: weighted[1] },
    ].sort((x, y) => y.score - x.score));
    // A repeated term keeps its first weight: an expansion never overrides a word the query said.
    expect(index.scoreKeys(['c', 'c'], [2], [1, 0.1])[0]).toBe(index.scoreKeys(['c'], [2])[0]);
  });

  it('leaves out a weighted-down term held by more than EXPANSION_MAX_SHARE of the documents, on every path', () => {
    const index = new Bm25Index();
    for (let key = 0; key < 40; key++) index.add(key, key < 2 ? ['rare', 'x'] : key < 20 ? ['common', 'x'] : ['x']);
    expect(EXPANSION_MAX_SHARE).toBeLessThan(18 / 40);
    expect(index.scoreKeys(['common'], [5], [0.5])[0]).toBe(0);
    expect(index.scoreKeys(['common'], [5], [1])[0]).toBeGreaterThan(0);
    expect(index.scoreKeys(['rare'], [1], [0.5])[0]).toBeGreaterThan(0);
    const visited: number[] = [];
    index.forEachScore(['common', 'rare'], (key) => visited.push(key), [0.5, 0.5]);
    expect(visited.sort((a, b) => a - b)).toEqual([0, 1]);
    expect(index.topKeys(['common', 'rare'], 10, undefined, [0.5, 0.5]).map((hit) => hit.key).sort()).toEqual([0, 1]);
  });
});
