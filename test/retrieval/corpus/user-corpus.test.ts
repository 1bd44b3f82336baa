import { describe, expect, it } from 'vitest';
import { analyze } from '../../../src/retrieval/analyzer.js';
import { entityMentions } from '../../../src/retrieval/entities/entity-mentions.js';
import { applyTerms, contextCosine, minMaxNormalize, type ScoreExplanation } from '../../../src/retrieval/fuse-scores.js';
import { DEFAULT_RETRIEVAL_WEIGHTS, resolveWeights } from '../../../src/retrieval/retrieval-config.js';
import type { CorpusQuery, CorpusUnit } from '../../../src/retrieval/corpus/corpus-types.js';
import { UserCorpus } from '../../../src/retrieval/corpus/user-corpus.js';
import { VectorIndex } from '../../../src/retrieval/vector-index.js';

const DIM = 8;

function axis(i: number): Float32Array {
  const vector = new Float32Array(DIM);
  vector[i % DIM] = 1;
  return vector;
}

function unit(seq: number, text: string, extra: Partial<CorpusUnit> = {}): CorpusUnit {
  return {
    seq,
    vector: axis(seq),
    terms: analyze(text),
    speaker: null,
    sessionId: 's',
    messageKey: `m${seq}`,
    timeMs: 1_700_000_000_000 + seq * 1000,
    importance: 0.5,
    tags: [],
    hasTimeExpression: false,
    eventPeriod: null,
    isQuestion: false,
    firstPerson: false,
    textKey: text.trim().replace(/\s+/g, ' ').toLowerCase(),
    entities: [],
    ...extra,
  };
}

function query(text: string, extra: Partial<CorpusQuery> = {}): CorpusQuery {
  return { main: { terms: analyze(text), vector: axis(7) }, options: [], speaker: null, wantedTags: new Set(), whenQuestion: false, period: null, ...extra };
}

function corpusWithIndex(): UserCorpus {
  const corpus = new UserCorpus();
  corpus.attachVectorIndex(VectorIndex.create(DIM));
  return corpus;
}

const lexicalOnly = resolveWeights({ denseWeight: 0, neighbourWeight: 0, decayWeight: 0, importanceWeight: 0 });

describe('UserCorpus', () => {
  it('ranks by BM25 when dense weight is 0, ties broken by newer first', () => {
    const corpus = corpusWithIndex();
    corpus.add([unit(0, 'apples are red'), unit(1, 'bananas are yellow'), unit(2, 'red red apples everywhere')]);
    const ranked = corpus.search(query('red apples'), lexicalOnly, 3);
    expect(ranked.map((r) => r.seq).slice(0, 2).sort()).toEqual([0, 2]);
    expect(ranked[2].seq).toBe(1);
    expect(ranked[2].score).toBe(0);
  });

  it('ranks by cosine when dense weight is 1', () => {
    const corpus = corpusWithIndex();
    corpus.add([unit(0, 'a'), unit(7, 'b'), unit(3, 'c')]);
    const ranked = corpus.search(query('zzz'), resolveWeights({ ...lexicalOnly, denseWeight: 1, contextWeight: 0 }), 3);
    expect(ranked[0].seq).toBe(7);
  });

  it('adds a share of the neighbouring turn\'s score (the question is often in the turn before the answer)', () => {
    const corpus = corpusWithIndex();
    corpus.add([unit(0, 'which instrument do you play'), unit(1, 'the violin every evening'), unit(2, 'nice weather today')]);
    const weights = resolveWeights({ ...lexicalOnly, neighbourWeight: 0.5 });
    const ranked = corpus.search(query('instrument'), weights, 3);
    expect(ranked.map((r) => r.seq)).toEqual([0, 1, 2]);
    expect(ranked[1].score).toBeCloseTo(0.5);
  });

  it('returns one result per message: its best part', () => {
    const corpus = corpusWithIndex();
    corpus.add([
      unit(0, 'long answer about gardening tomatoes', { messageKey: 'r#0' }),
      unit(1, 'more about tomatoes and gardening soil', { messageKey: 'r#0' }),
      unit(2, 'tomatoes in a salad', { messageKey: 'r#1' }),
    ]);
    const ranked = corpus.search(query('gardening tomatoes'), lexicalOnly, 10);
    expect(ranked).toHaveLength(2);
    expect(new Set(ranked.map((r) => r.seq)).has(2)).toBe(true);
  });

  it('boosts the named speaker softly, tags exactly, and filters only when asked', () => {
    const corpus = corpusWithIndex();
    corpus.add([unit(0, 'I like hiking', { speaker: 'caroline' }), unit(1, 'I like hiking', { speaker: 'melanie', tags: ['outdoors'] })]);
    const weights = resolveWeights({ ...lexicalOnly, speakerBoost: 0.3, tagBoost: 0.2 });
    expect(corpus.search(query('hiking', { speaker: 'caroline' }), weights, 2)[0].seq).toBe(0);
    expect(corpus.search(query('hiking', { wantedTags: new Set(['outdoors']) }), weights, 2)[0].seq).toBe(1);
    expect(corpus.search(query('hiking', { filter: (candidate) => candidate.seq === 0 }), weights, 2).map((r) => r.seq)).toEqual([0]);
  });

  it("adds the disclosure cue to the queried speaker's first-person turns, more for a question about the person", () => {
    const corpus = corpusWithIndex();
    corpus.add([
      unit(0, 'hiking is fun', { speaker: 'caroline' }),
      unit(1, 'I went hiking', { speaker: 'caroline', firstPerson: true }),
      unit(2, 'I went hiking', { speaker: 'melanie', firstPerson: true }),
    ]);
    const weights = resolveWeights({ ...lexicalOnly, speakerBoost: 0, disclosureBoost: 0.1, aboutPersonBoost: 0.05 });
    const termOf = (ranked: ReturnType<UserCorpus['search']>, seq: number) => ranked.find((r) => r.seq === seq)!.explanation!.terms.find((t) => t.term === 'disclosure')?.value;
    const aboutEvent = corpus.search(query('hiking', { speaker: 'caroline', explain: true }), weights, 3);
    expect(aboutEvent[0].seq).toBe(1);
    expect(termOf(aboutEvent, 1)).toBeCloseTo(0.1, 12);
    expect(termOf(aboutEvent, 0)).toBeUndefined();
    expect(termOf(aboutEvent, 2)).toBeUndefined();
    const aboutPerson = corpus.search(query('hiking', { speaker: 'caroline', aboutPerson: true, explain: true }), weights, 3);
    expect(termOf(aboutPerson, 1)).toBeCloseTo(0.15, 12);
    // A generic role the query is about counts as the queried person; no person named, no cue.
    corpus.add([unit(3, 'I went hiking', { speaker: 'user', firstPerson: true })]);
    expect(termOf(corpus.search(query('hiking', { role: 'user', explain: true }), weights, 4), 3)).toBeCloseTo(0.1, 12);
    expect(corpus.search(query('hiking', { explain: true }), weights, 4).every((r) => r.explanation!.terms.every((t) => t.term !== 'disclosure'))).toBe(true);
  });

  it('ranks a filtered search among the matching units only: their scores are normalised among themselves, and the limit fills', () => {
    const corpus = corpusWithIndex();
    corpus.add([unit(0, 'red red red apples'), unit(1, 'red apples'), unit(2, 'green apples'), unit(3, 'green pears')]);
    const greenOnly = (candidate: CorpusUnit) => candidate.seq >= 2;
    const filtered = corpus.search(query('red apples', { filter: greenOnly }), lexicalOnly, 2);
    expect(filtered.map((r) => r.seq)).toEqual([2, 3]);
    // Among the green ones alone, "green apples" is the best match: normalised to 1, not to its share of the red ones' BM25.
    expect(filtered[0].score).toBe(1);
  });

  it('collapses units of one text when asked: the best copy (the newest on ties), counting the others', () => {
    const corpus = corpusWithIndex();
    corpus.add([unit(0, 'I moved to Berlin'), unit(1, 'i  moved to BERLIN'), unit(2, 'Berlin is big'), unit(3, 'I moved to Berlin')]);
    const collapsed = corpus.search(query('moved Berlin', { collapseDuplicates: true }), lexicalOnly, 5);
    expect(collapsed.map((r) => [r.seq, r.duplicates])).toEqual([[3, 2], [2, undefined]]);
    expect(corpus.search(query('moved Berlin'), lexicalOnly, 5)).toHaveLength(4);
    // Filtered, only the matching copies count.
    expect(corpus.search(query('moved Berlin', { collapseDuplicates: true, filter: (candidate) => candidate.seq !== 3 }), lexicalOnly, 5).map((r) => [r.seq, r.duplicates])).toEqual([[1, 1], [2, undefined]]);
  });

  it('explains each score with terms that replay to it, and ranks the same with or without explaining', () => {
    const corpus = corpusWithIndex();
    corpus.add([
      unit(0, 'which instrument do you play', { speaker: 'caroline', importance: 0.9, hasTimeExpression: true }),
      unit(1, 'the violin every evening since May', { speaker: 'melanie', tags: ['music'] }),
      unit(2, 'nice weather today, we played outside', { speaker: 'caroline', timeMs: 1_600_000_000_000 }),
    ]);
    const q = query('when did Caroline play an instrument', {
      speaker: 'caroline',
      wantedTags: new Set(['music']),
      whenQuestion: true,
      options: [{ terms: analyze('violin'), vector: axis(1) }],
    });
    const plain = corpus.search(q, DEFAULT_RETRIEVAL_WEIGHTS, 3);
    const explained = corpus.search({ ...q, explain: true }, DEFAULT_RETRIEVAL_WEIGHTS, 3);
    expect(plain.every((r) => r.explanation === undefined)).toBe(true);
    expect(explained.map((r) => [r.seq, r.score])).toEqual(plain.map((r) => [r.seq, r.score]));
    for (const { score, explanation } of explained) {
      expect(explanation!.score).toBe(score);
      expect(applyTerms(explanation!.terms)).toBe(score);
    }
    const terms = (seq: number) => explained.find((r) => r.seq === seq)!.explanation!.terms.map((t) => t.term);
    expect(terms(0)).toEqual(expect.arrayContaining(['bm25', 'speaker', 'timeCue', 'importance']));
    expect(terms(1)).toEqual(expect.arrayContaining(['options', 'tags', 'neighbours']));
    expect(terms(2)).toContain('decay');
  });

  it('boosts units whose event period overlaps the named one, and lowers question turns while their neighbours keep their share', () => {
    const may = { startMs: Date.UTC(2023, 4, 1), endMs: Date.UTC(2023, 5, 1) };
    const corpus = corpusWithIndex();
    corpus.add([
      unit(0, 'what did you paint', { isQuestion: true }),
      unit(1, 'I painted a lake', { eventPeriod: { startMs: Date.UTC(2023, 4, 8), endMs: Date.UTC(2023, 4, 9) } }),
      unit(2, 'I painted a lake too'),
    ]);
    const weights = resolveWeights({ ...lexicalOnly, neighbourWeight: 0.5, eventPeriodBoost: 0.4, questionTurnPenalty: 0.1 });
    const ranked = corpus.search(query('paint', { period: may, explain: true }), weights, 3);
    const byseq = new Map(ranked.map((r) => [r.seq, r]));
    expect(byseq.get(1)!.explanation!.terms).toContainEqual({ term: 'eventPeriod', kind: 'add', value: 0.4 });
    expect(byseq.get(0)!.explanation!.terms).toContainEqual({ term: 'questionTurn', kind: 'add', value: -0.1 });
    expect(byseq.get(2)!.explanation!.terms.some((t) => t.term === 'eventPeriod')).toBe(false);
    // The question turn's full base still feeds its neighbour: without the penalty, the same neighbour share.
    const unpenalised = corpus.search(query('paint', { period: may, explain: true }), resolveWeights({ ...weights, questionTurnPenalty: 0 }), 3);
    const share = (list: typeof ranked) => list.find((r) => r.seq === 1)!.explanation!.terms.find((t) => t.term === 'neighbours')?.value;
    expect(share(ranked)).toBe(share(unpenalised));
    expect(byseq.get(0)!.score).toBeCloseTo(unpenalised.find((r) => r.seq === 0)!.score - 0.1, 12);
  });

  it('weighs the period boosts by how exactly the periods coincide, each by its own sharpness', () => {
    const DAY = 86_400_000;
    const may8 = { startMs: Date.UTC(2023, 4, 8), endMs: Date.UTC(2023, 4, 9) };
    const corpus = corpusWithIndex();
    corpus.add([
      unit(0, 'I painted a lake', { eventPeriod: may8, timeMs: may8.startMs + DAY + 3_600_000 }),
      unit(1, 'I painted a lake too', { eventPeriod: { startMs: Date.UTC(2023, 4, 1), endMs: Date.UTC(2023, 4, 5) }, timeMs: may8.startMs + 3_600_000 }),
    ]);
    const weights = resolveWeights({ ...lexicalOnly, periodBoost: 0.3, eventPeriodBoost: 0.4, periodSharpness: 0.5, eventPeriodSharpness: 1 });
    const term = (list: ReturnType<UserCorpus['search']>, seq: number, name: string) =>
      list.find((r) => r.seq === seq)!.explanation!.terms.find((t) => t.term === name)?.value;
    // The day asked: the event told the next day counts fully, the turn dated that day fully too.
    const day = corpus.search(query('paint', { period: may8, explain: true }), weights, 2);
    expect(term(day, 0, 'eventPeriod')).toBeCloseTo(0.4, 12);
    expect(term(day, 1, 'period')).toBeCloseTo(0.3, 12);
    expect(term(day, 1, 'eventPeriod')).toBeUndefined();
    // The week of 1-7 May plus the 8th (8 days): the four-day event inside it by its specificity alone.
    const week = { startMs: Date.UTC(2023, 4, 1), endMs: Date.UTC(2023, 4, 9) };
    const wide = corpus.search(query('paint', { period: week, explain: true }), weights, 2);
    expect(term(wide, 1, 'eventPeriod')).toBeCloseTo(0.4 / 8, 12);
    expect(term(wide, 1, 'period')).toBeCloseTo(0.3 * Math.sqrt(1 / 8), 12);
    expect(term(wide, 0, 'eventPeriod')).toBeCloseTo(0.4 / 8, 12);
  });

  it('gives "when" questions the catch-up boost in the first two turns of a session only, parts of one message counting once', () => {
    const corpus = corpusWithIndex();
    const said = { hasTimeExpression: true };
    corpus.add([
      unit(0, 'hi again, last week I ran a race', { ...said, messageKey: 'm0' }),
      unit(1, 'and yesterday I ran again', { ...said, messageKey: 'm1' }),
      unit(2, 'yesterday I ran once more', { ...said, messageKey: 'm1' }),
      unit(3, 'last month I ran too', said),
      unit(4, 'I ran on Monday', { ...said, sessionId: null }),
    ]);
    const weights = resolveWeights({ ...lexicalOnly, timeCueBoost: 0.05, catchUpBoost: 0.1 });
    const ranked = corpus.search(query('ran', { whenQuestion: true, explain: true }), weights, 5);
    const cue = (...seqs: number[]) => ranked.find((r) => seqs.includes(r.seq))!.explanation!.terms.find((t) => t.term === 'timeCue')?.value;
    expect(cue(0)).toBeCloseTo(0.15, 12);
    // The second message (units 1 and 2) returns its best part once; it is the second turn either way.
    expect(cue(1, 2)).toBeCloseTo(0.15, 12);
    expect(cue(3)).toBe(0.05);
    // A memory outside any session opens nothing.
    expect(cue(4)).toBe(0.05);
    const plain = corpus.search(query('ran', { whenQuestion: false, explain: true }), weights, 5);
    expect(plain.every((r) => r.explanation!.terms.every((t) => t.term !== 'timeCue'))).toBe(true);
  });

  it('removal drops a unit from every index and relinks its session', () => {
    const corpus = corpusWithIndex();
    corpus.add([unit(0, 'question about cats'), unit(1, 'answer about dogs'), unit(2, 'more about birds')]);
    corpus.remove(1);
    expect(corpus.size).toBe(2);
    expect(corpus.vectors!.has(1)).toBe(false);
    const ranked = corpus.search(query('cats'), resolveWeights({ ...lexicalOnly, neighbourWeight: 0.5 }), 5);
    expect(ranked.map((r) => r.seq)).toEqual([0, 2]);
    expect(ranked[1].score).toBeCloseTo(0.5);
  });

  it('takes HNSW and BM25 candidates above the exhaustive limit and still finds the answer', () => {
    const corpus = corpusWithIndex();
    const units = Array.from({ length: 300 }, (_, i) => unit(i, `filler text number ${i}`, { sessionId: `s${i % 7}` }));
    units.push(unit(300, 'the secret password is swordfish', { sessionId: 's0' }));
    corpus.add(units);
    const weights = resolveWeights({ ...DEFAULT_RETRIEVAL_WEIGHTS, exhaustiveLimit: 50, candidatePool: 20 });
    expect(corpus.search(query('secret password'), weights, 5)[0].seq).toBe(300);
  });

  it('boosts the units of a queried entity by its specificity, and draws them into a large user\'s candidates', () => {
    const corpus = corpusWithIndex();
    const named = (seq: number, text: string, speaker: string) => unit(seq, text, { speaker: speaker.toLowerCase(), entities: entityMentions(text, speaker), vector: axis(seq % DIM) });
    const units = Array.from({ length: 300 }, (_, i) => named(i, `filler text number ${i}`, i % 2 ? 'Ann' : 'Bo'));
    units.push(named(300, 'we flew there in spring', 'Bo'), named(301, 'I loved the trip to Sweden', 'Ann'));
    corpus.add(units);
    const asked = query('trip', { entities: ['sweden', 'ann'] });
    const off = resolveWeights({ ...lexicalOnly, exhaustiveLimit: 50, candidatePool: 5 });
    const on = { ...off, entityBoost: 0.5 };
    const sweden = corpus.search(asked, on, 3).find((hit) => hit.seq === 301)!;
    const boosted = corpus.search({ ...asked, explain: true }, { ...on, exhaustiveLimit: 1000 }, 400);
    const term = (seq: number) => boosted.find((hit) => hit.seq === seq)?.explanation?.terms.find((t) => t.term === 'entity')?.value ?? 0;
    // Sweden: one unit of 302, specificity 1; Ann, the speaker of half of them, adds little.
    expect(term(301)).toBeCloseTo(0.5 * (1 + Math.log(302 / 151) / Math.log(302)), 12);
    expect(term(1)).toBeCloseTo(0.5 * (Math.log(302 / 151) / Math.log(302)), 12);
    expect(term(300)).toBe(0);
    expect(sweden).toBeDefined();
    // A query sharing no word with the Sweden turn, whose vector is far from it: only as the entity's unit does it join the candidates.
    const far = query('flight', { entities: ['sweden'] });
    expect(corpus.search(far, off, 400).map((hit) => hit.seq)).not.toContain(301);
    expect(corpus.search(far, on, 400).map((hit) => hit.seq)).toContain(301);
    // With the boost at 0, no entity term and the ranking of before.
    expect(corpus.search(asked, off, 10)).toEqual(corpus.search({ ...asked, entities: undefined }, off, 10));
  });
});

describe('UserCorpus appends (the slot layout extended, not rebuilt)', () => {
  /** Units of a few sessions, parts of one message sharing a key, repeated texts, out-of-order times. */
  function mixedUnits(count: number): CorpusUnit[] {
    const words = ['garden', 'violin', 'tomatoes', 'paris', 'dog', 'birthday', 'painting', 'soup'];
    return Array.from({ length: count }, (_, seq) =>
      unit(seq, `${words[seq % words.length]} and ${words[(seq * 3) % words.length]} ${seq % 4 === 0 ? 'again' : ''}`, {
        sessionId: seq % 11 === 0 ? null : `s${seq % 5}`,
        messageKey: seq % 6 === 1 ? `m${seq - 1}` : `m${seq}`,
        timeMs: 1_700_000_000_000 + ((seq * 7919) % 97) * 60_000,
        vector: Float32Array.from({ length: DIM }, (_, i) => Math.sin(seq * 0.37 + i)),
        hasTimeExpression: seq % 3 === 0,
      }),
    );
  }

  const queries = [query('garden tomatoes'), query('when was the birthday', { whenQuestion: true }), query('violin paris dog', { collapseDuplicates: true })];
  const weights = resolveWeights({ ...DEFAULT_RETRIEVAL_WEIGHTS, decayWeight: 0.1 });

  it('ranks exactly as a corpus given every unit at once, searched between the appends', () => {
    const units = mixedUnits(120);
    const whole = new UserCorpus();
    whole.add(units.map((entry) => ({ ...entry })));
    const appended = new UserCorpus();
    for (let start = 0; start < units.length; start += 17) {
      appended.add(units.slice(start, start + 17).map((entry) => ({ ...entry })));
      // A search between appends builds the layout, so the next append extends it.
      appended.search(queries[0], weights, 5);
    }
    for (const q of queries) expect(appended.search({ ...q, explain: true }, weights, 40)).toEqual(whole.search({ ...q, explain: true }, weights, 40));
  });

  it('past the exhaustive limit too: the candidates scored by lookups give the scores of the same candidates scored in full', () => {
    const units = mixedUnits(400);
    const build = (parts: number) => {
      const corpus = corpusWithIndex();
      const size = Math.ceil(units.length / parts);
      for (let start = 0; start < units.length; start += size) {
        corpus.add(units.slice(start, start + size).map((entry) => ({ ...entry })));
        corpus.search(queries[0], weights, 5);
      }
      return corpus;
    };
    const large = resolveWeights({ ...weights, exhaustiveLimit: 50, candidatePool: 20 });
    for (const q of queries) expect(build(7).search(q, large, 30)).toEqual(build(1).search(q, large, 30));
  });
});

describe('UserCorpus scoring in two halves', () => {
  /** Deterministic pseudo-random vector of an odd, realistic dimension (exercises the kernels' tails). */
  function noisy(seed: number, dimensions = 513): Float32Array {
    return Float32Array.from({ length: dimensions }, (_, i) => Math.sin((seed + 1) * (i + 1) * 0.7) / Math.sqrt(dimensions));
  }

  /** A dot product in the order the kernels document (kernels.test.ts holds them to it): by index mod 4, then the tail. */
  function plainDot(a: Float32Array, b: Float32Array): number {
    const n = Math.min(a.length, b.length);
    const sums = [0, 0, 0, 0];
    for (let i = 0; i < n - (n % 4); i++) sums[i % 4] += a[i] * b[i];
    let tail = 0;
    for (let i = n - (n % 4); i < n; i++) tail += a[i] * b[i];
    return sums[0] + sums[2] + (sums[1] + sums[3]) + tail;
  }

  it('gives the dense term the very bits of a dot product in the documented order, context blend included', () => {
    const corpus = new UserCorpus();
    // An odd count: the two-at-a-time kernel has a unit left over.
    corpus.add(Array.from({ length: 7 }, (_, seq) => unit(seq, `unit ${seq}`, { vector: noisy(seq) })));
    const vector = noisy(99);
    const weights = resolveWeights({ ...lexicalOnly, denseWeight: 1, contextWeight: 0.5 });
    const ranked = corpus.search({ ...query('nothing'), main: { terms: [], vector }, explain: true }, weights, 7);
    const raw = Array.from({ length: 7 }, (_, seq) =>
      contextCosine(plainDot(vector, noisy(seq)), seq > 0 ? plainDot(vector, noisy(seq - 1)) : undefined, seq > 0 ? plainDot(noisy(seq), noisy(seq - 1)) : undefined, 0.5),
    );
    const expected = minMaxNormalize(raw);
    for (const { seq, explanation } of ranked) {
      const dense = explanation!.terms.find((term) => term.term === 'dense')?.value ?? 0;
      expect(dense).toBe(expected[seq]);
    }
  });

  it('ranks what was prepared before a write as a search after it would', () => {
    const corpus = new UserCorpus();
    corpus.add([unit(0, 'apples are red'), unit(1, 'bananas are yellow')]);
    const prepared = corpus.prepare(query('red apples'), DEFAULT_RETRIEVAL_WEIGHTS);
    corpus.add([unit(2, 'red red apples everywhere')]);
    const ranked = corpus.rank(prepared, [axis(7)], 3);
    expect(ranked).toEqual(corpus.search(query('red apples'), DEFAULT_RETRIEVAL_WEIGHTS, 3));
    expect(ranked.map((r) => r.seq)).toContain(2);
  });
});

describe('UserCorpus without an HNSW index', () => {
  it('searches exhaustively, and an index attached later takes every unit through indexPending', () => {
    const corpus = new UserCorpus();
    corpus.add([unit(0, 'alpha'), unit(1, 'beta'), unit(2, 'gamma')]);
    expect(corpus.vectors).toBeNull();
    expect(corpus.search(query('beta'), lexicalOnly, 1)[0].seq).toBe(1);
    corpus.attachVectorIndex(VectorIndex.create(DIM));
    expect(corpus.vectorIndexComplete).toBe(false);
    expect(corpus.indexPending(2)).toBe(1);
    expect(corpus.indexPending(10)).toBe(0);
    expect(corpus.vectorIndexComplete).toBe(true);
    expect(corpus.vectors!.size).toBe(3);
  });
});

describe('UserCorpus with HNSW inserts deferred (a write acknowledged before its graph insert)', () => {
  /** Past the exhaustive limit, a search takes two candidates from each list. */
  const graphWeights = resolveWeights({ exhaustiveLimit: 4, candidatePool: 2 });
  const alone = (seq: number, text: string) => unit(seq, text, { sessionId: `s${seq}` });

  it('scores the units not in the graph yet beside the graph candidates, not every unit', () => {
    const corpus = corpusWithIndex();
    corpus.add(Array.from({ length: 12 }, (_, seq) => alone(seq, `plain note ${seq}`)));
    expect(corpus.vectorIndexComplete).toBe(true);
    corpus.add([alone(12, 'the violin lesson moved to thursday')], true);
    expect(corpus.vectorIndexComplete).toBe(false);
    const violin = query('when is the violin lesson', { main: { terms: analyze('when is the violin lesson'), vector: axis(12) } });
    const ranked = corpus.search(violin, graphWeights, 100);
    expect(ranked[0].seq).toBe(12);
    // Candidates only (two from each list and the deferred unit), not all 13.
    expect(ranked.length).toBeLessThan(13);
    expect(corpus.indexPending(64)).toBe(0);
    expect(corpus.search(violin, graphWeights, 100)[0].seq).toBe(12);
  });

  it('scores every unit while most are missing from the graph (a rebuild)', () => {
    const corpus = new UserCorpus();
    corpus.add(Array.from({ length: 12 }, (_, seq) => alone(seq, `plain note ${seq}`)));
    corpus.attachVectorIndex(VectorIndex.create(DIM));
    corpus.indexPending(3);
    expect(corpus.search(query('plain note'), graphWeights, 100)).toHaveLength(12);
  });
});

describe('UserCorpus with units waiting for a vector of the current model (re-embedding)', () => {
  const hybrid = resolveWeights({ ...lexicalOnly, denseWeight: 0.5, contextWeight: 0 });

  it('ranks the user by BM25 alone until every unit has its vector, then by both', () => {
    const corpus = corpusWithIndex();
    // Unit 7 matches the query's vector; units 0 and 2 its words.
    corpus.add([unit(0, 'red apples', { vector: null }), unit(7, 'nothing here'), unit(2, 'apples', { vector: null })]);
    expect(corpus.unembeddedSeqs.sort()).toEqual([0, 2]);
    const during = corpus.search(query('red apples'), hybrid, 3);
    expect(during).toEqual(corpus.search(query('red apples'), { ...hybrid, denseWeight: 0 }, 3));
    expect(during.find((r) => r.seq === 7)!.score).toBe(0);
    expect(corpus.vectors!.size).toBe(1);

    corpus.setVectors([{ seq: 0, vector: axis(0) }]);
    // One unit still waits: the dense half stays off.
    expect(corpus.search(query('red apples'), hybrid, 3).find((r) => r.seq === 7)!.score).toBe(0);
    corpus.setVectors([{ seq: 2, vector: axis(2) }]);
    expect(corpus.unembeddedSeqs).toEqual([]);
    expect(corpus.search(query('red apples'), hybrid, 3).find((r) => r.seq === 7)!.score).toBeCloseTo(0.5);
    // Re-embedded units wait for the graph like any deferred insert.
    expect(corpus.indexPending(10)).toBe(0);
    expect(corpus.vectors!.size).toBe(3);
  });

  it('ranks again what a prepared search found while the last vectors came in', () => {
    const corpus = corpusWithIndex();
    corpus.add([unit(0, 'red apples', { vector: null }), unit(7, 'nothing here')]);
    const prepared = corpus.prepare(query('red apples'), hybrid);
    corpus.setVectors([{ seq: 0, vector: axis(0) }]);
    const ranked = corpus.rank(prepared, [axis(7)], 2);
    expect(ranked.find((r) => r.seq === 7)!.score).toBeCloseTo(0.5);
  });
});

describe('UserCorpus holding its vectors compactly (a user that keeps a graph)', () => {
  /** Deterministic pseudo-random unit vectors, so that the codes are not exact. */
  function spread(seed: number): Float32Array {
    const raw = Array.from({ length: DIM }, (_, i) => Math.sin((seed + 1) * (i + 3) * 1.7));
    const norm = Math.hypot(...raw);
    return Float32Array.from(raw, (x) => x / norm);
  }
  const units = () => Array.from({ length: 40 }, (_, seq) => unit(seq, `note ${seq % 5} about ${seq % 3 ? 'tea' : 'coffee'}`, { vector: spread(seq), sessionId: `s${seq % 4}` }));
  const hybrid = resolveWeights({ ...DEFAULT_RETRIEVAL_WEIGHTS, contextWeight: 0.3 });
  const denseTerm = (explanation: ScoreExplanation | undefined) => explanation!.terms.find((term) => term.term === 'dense')?.value ?? 0;

  it('takes the vectors into the slab on attach, keeping a float only until the graph has it', () => {
    const given = units();
    const corpus = new UserCorpus();
    corpus.add(given);
    expect(corpus.vectorsCompact).toBe(false);
    corpus.attachVectorIndex(VectorIndex.create(DIM));
    expect(corpus.vectorsCompact).toBe(true);
    // Every unit waits for the fresh graph: each keeps its float for its insert.
    expect(given.every((entry) => entry.vector !== null)).toBe(true);
    corpus.indexPending(10);
    expect(given.filter((entry) => entry.vector === null)).toHaveLength(10);
    corpus.indexPending(100);
    expect(given.every((entry) => entry.vector === null)).toBe(true);
    const back = corpus.vectorOf(7)!;
    for (let i = 0; i < DIM; i++) expect(back[i]).toBeCloseTo(spread(7)[i], 2);
    // Added once the graph is complete: inserted at once, then held as codes only.
    const late = unit(40, 'late note', { vector: spread(40) });
    corpus.add([late]);
    expect(late.vector).toBeNull();
    expect(corpus.vectors!.has(40)).toBe(true);
  });

  it('scores dense terms within 10⁻² of the floats, and alike whether or not the graph holds a unit yet', () => {
    const floats = new UserCorpus();
    floats.add(units());
    const compact = new UserCorpus();
    compact.add(units());
    compact.attachVectorIndex(VectorIndex.create(DIM));
    const q: CorpusQuery = { ...query('tea'), main: { terms: analyze('tea'), vector: spread(99) }, explain: true };
    const during = compact.search(q, hybrid, 40);
    compact.indexPending(100);
    expect(compact.search(q, hybrid, 40)).toEqual(during);
    const exact = new Map(floats.search(q, hybrid, 40).map((r) => [r.seq, denseTerm(r.explanation)]));
    for (const r of during) expect(Math.abs(denseTerm(r.explanation) - exact.get(r.seq)!)).toBeLessThan(1e-2);
  });

  it('gives a removed unit’s row to the next one, and re-embedded units their codes', () => {
    const corpus = corpusWithIndex();
    corpus.add(units());
    corpus.remove(3);
    corpus.add([unit(50, 'new note', { vector: spread(50) }), unit(51, 'waits for its vector', { vector: null })]);
    for (const seq of [2, 4, 50]) expect(plainCosine(corpus.vectorOf(seq)!, spread(seq))).toBeGreaterThan(0.999);
    expect(corpus.vectorOf(3)).toBeUndefined();
    expect(corpus.vectorOf(51)).toBeUndefined();
    corpus.setVectors([{ seq: 51, vector: spread(51) }]);
    expect(plainCosine(corpus.vectorOf(51)!, spread(51))).toBeGreaterThan(0.999);
    const q: CorpusQuery = { ...query('nothing'), main: { terms: [], vector: spread(51) } };
    expect(corpus.search(q, resolveWeights({ ...lexicalOnly, denseWeight: 1, contextWeight: 0 }), 1)[0].seq).toBe(51);
  });
});

function plainCosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  for (let i = 0; i < a.length; i++) dot += a[i] * b[i];
  return dot / (Math.hypot(...a) * Math.hypot(...b));
}
