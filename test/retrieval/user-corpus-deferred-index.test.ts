import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/retrieval/analyzer.js';
import { resolveWeights } from '../../src/retrieval/retrieval-config.js';
import { UserCorpus, type CorpusUnit } from '../../src/retrieval/user-corpus.js';
import { VectorIndex } from '../../src/retrieval/vector-index.js';

const DIM = 16;

function vectorFor(seq: number): Float32Array {
  const vector = new Float32Array(DIM);
  vector[seq % DIM] = 1;
  vector[(seq * 7 + 3) % DIM] += 0.5;
  return vector;
}

function unit(seq: number, text: string): CorpusUnit {
  return {
    seq,
    vector: vectorFor(seq),
    terms: analyze(text),
    speaker: null,
    sessionId: `s${seq}`,
    messageKey: null,
    timeMs: 1_700_000_000_000 + seq * 1000,
    importance: 0.5,
    tags: [],
    hasTimeExpression: false,
    eventPeriod: null,
    isQuestion: false,
  };
}

/** Past the exhaustive limit, a search takes a few candidates from each list. */
const graphWeights = resolveWeights({ exhaustiveLimit: 4, candidatePool: 2 });

describe('UserCorpus with HNSW inserts deferred (a write acknowledged before its graph insert)', () => {
  it('scores the units not in the graph yet beside the graph candidates, not every unit', () => {
    const corpus = new UserCorpus();
    corpus.attachVectorIndex(VectorIndex.create(DIM));
    corpus.add(Array.from({ length: 12 }, (_, seq) => unit(seq, `plain note ${seq}`)));
    expect(corpus.vectorIndexComplete).toBe(true);

    corpus.add([unit(12, 'the violin lesson moved to thursday')], true);
    expect(corpus.vectorIndexComplete).toBe(false);
    const query = { main: { terms: analyze('when is the violin lesson'), vector: vectorFor(12) }, options: [], speaker: null, wantedTags: new Set<string>(), whenQuestion: false, period: null };
    const ranked = corpus.search(query, graphWeights, 100);
    expect(ranked[0].seq).toBe(12);
    // Candidates only (two from each list, the deferred unit, no neighbours across sessions), not all 13.
    expect(ranked.length).toBeLessThan(13);

    expect(corpus.indexPending(64)).toBe(0);
    expect(corpus.search(query, graphWeights, 100)[0].seq).toBe(12);
  });

  it('scores every unit while most are missing from the graph (a rebuild)', () => {
    const corpus = new UserCorpus();
    corpus.add(Array.from({ length: 12 }, (_, seq) => unit(seq, `plain note ${seq}`)));
    corpus.attachVectorIndex(VectorIndex.create(DIM));
    corpus.indexPending(3);
    const query = { main: { terms: analyze('plain note'), vector: vectorFor(5) }, options: [], speaker: null, wantedTags: new Set<string>(), whenQuestion: false, period: null };
    expect(corpus.search(query, graphWeights, 100)).toHaveLength(12);
  });
});
