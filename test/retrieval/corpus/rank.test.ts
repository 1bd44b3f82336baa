import { describe, expect, it } from 'vitest';
import { applyTerms, CUE_PARTS, type CueColumns } from '../../../src/retrieval/fuse-scores.js';
import { rankCandidates, type RankLayout } from '../../../src/retrieval/corpus/rank.js';

/** Four units in slots 0..3, candidates in slot order; cues neutral unless set. */
function layout(extra: Partial<RankLayout> = {}): RankLayout {
  return {
    units: [{ seq: 10 }, { seq: 11 }, { seq: 12 }, { seq: 13 }],
    previousTurn: Int32Array.from([-1, 0, 1, 2]),
    nextTurn: Int32Array.from([1, 2, 3, -1]),
    message: Int32Array.from([-1, -1, -1, -1]),
    messageCount: 0,
    text: Int32Array.from([0, 1, 2, 3]),
    textCount: 4,
    ...extra,
  };
}
function cues(set: Partial<Record<keyof CueColumns, number[]>> = {}): CueColumns {
  const out = {} as CueColumns;
  for (const part of CUE_PARTS) out[part.name] = Float64Array.from(set[part.name] ?? [0, 0, 0, 0].map(() => (part.kind === 'multiply' ? 1 : 0)));
  return out;
}
const candidates = Int32Array.from([0, 1, 2, 3]);
const position = (slot: number) => slot;
const weights = { optionWeight: 0.5, neighbourWeight: 0.5 };

describe('rankCandidates', () => {
  it('adds the better turn neighbour\'s base share, then sorts by score', () => {
    const dense = [Float64Array.from([0.4, 0, 0.1, 0])];
    const lexical = [Float64Array.from([0, 0.2, 0, 0])];
    const ranked = rankCandidates({ candidates, position, dense, lexical, cues: cues() }, layout(), weights, {}, 10);
    // Bases 0.4, 0.2, 0.1, 0; each adds half its better turn neighbour's base.
    expect(ranked.map((unit) => unit.seq)).toEqual([10, 11, 12, 13]);
    expect(ranked.map((unit) => unit.score)).toEqual([0.4 + 0.5 * 0.2, 0.2 + 0.5 * 0.4, 0.1 + 0.5 * 0.2, 0 + 0.5 * 0.1]);
  });

  it('breaks ties by the newer seq, cuts at the limit, and keeps one result per message', () => {
    const noNeighbours = layout({ previousTurn: Int32Array.from([-1, -1, -1, -1]), nextTurn: Int32Array.from([-1, -1, -1, -1]) });
    const flat = [Float64Array.from([0.3, 0.3, 0.3, 0.1])];
    const zero = [new Float64Array(4)];
    expect(rankCandidates({ candidates, position, dense: flat, lexical: zero, cues: cues() }, noNeighbours, weights, {}, 2).map((u) => u.seq)).toEqual([12, 11]);
    const oneMessage = layout({ ...noNeighbours, message: Int32Array.from([0, 0, 0, -1]), messageCount: 1 });
    expect(rankCandidates({ candidates, position, dense: flat, lexical: zero, cues: cues() }, oneMessage, weights, {}, 10).map((u) => u.seq)).toEqual([12, 13]);
  });

  it('takes the best option share, weighted, into the base', () => {
    const noNeighbours = layout({ previousTurn: Int32Array.from([-1, -1, -1, -1]), nextTurn: Int32Array.from([-1, -1, -1, -1]) });
    const dense = [new Float64Array(4), Float64Array.from([0.2, 0, 0, 0]), Float64Array.from([0.6, 0, 0, 0.4])];
    const lexical = [new Float64Array(4), new Float64Array(4), new Float64Array(4)];
    const ranked = rankCandidates({ candidates, position, dense, lexical, cues: cues() }, noNeighbours, weights, {}, 2);
    expect(ranked).toEqual([{ seq: 10, score: 0.5 * 0.6 }, { seq: 13, score: 0.5 * 0.4 }]);
  });

  it('collapses copies of one text into the best, counting the others, and explains each score exactly', () => {
    const noNeighbours = layout({ previousTurn: Int32Array.from([-1, -1, -1, -1]), nextTurn: Int32Array.from([-1, -1, -1, -1]), text: Int32Array.from([0, 0, 0, 1]), textCount: 2 });
    const dense = [Float64Array.from([0.3, 0.5, 0.1, 0.2])];
    const lexical = [new Float64Array(4)];
    const ranked = rankCandidates(
      { candidates, position, dense, lexical, cues: cues({ speaker: [0, 0, 0, 0.1], decay: [1, 0.9, 1, 1] }) },
      noNeighbours,
      weights,
      { collapseDuplicates: true, explain: true },
      10,
    );
    expect(ranked.map((unit) => [unit.seq, unit.duplicates])).toEqual([[11, 2], [13, undefined]]);
    expect(ranked[0].score).toBe(0.5 * 0.9);
    expect(ranked[0].explanation!.terms).toEqual([{ term: 'dense', kind: 'add', value: 0.5 }, { term: 'decay', kind: 'multiply', value: 0.9 }]);
    expect(ranked[1].explanation!.terms.map((term) => term.term)).toEqual(['dense', 'speaker']);
    for (const unit of ranked) expect(applyTerms(unit.explanation!.terms)).toBe(unit.score);
  });
});
