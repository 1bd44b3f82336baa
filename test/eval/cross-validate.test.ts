import { describe, expect, it } from 'vitest';
import { assignFolds, crossValidate, expandGrid, parseGrid } from '../../eval/cross-validate.js';
import type { QuestionScore } from '../../eval/metrics.js';
import { DEFAULT_RETRIEVAL_WEIGHTS } from '../../src/retrieval/retrieval-config.js';

function found(hit: boolean, id: string): QuestionScore {
  return { questionId: id, category: '1', turnRanks: [hit ? 1 : null], sessionRanks: [], returned: 1 };
}

// Share of questions whose evidence was found.
const objective = (scores: readonly QuestionScore[]) => scores.filter((s) => s.turnRanks[0] !== null).length / Math.max(1, scores.length);

describe('grid', () => {
  it('parses known weights and rejects unknown ones or non-numbers', () => {
    expect(parseGrid('speakerBoost=0.15,0.25; decayWeight=0')).toEqual([
      ['speakerBoost', [0.15, 0.25]],
      ['decayWeight', [0]],
    ]);
    expect(() => parseGrid('nope=1')).toThrow('unknown weight "nope"');
    expect(() => parseGrid('speakerBoost=a')).toThrow('expected speakerBoost=<number>');
    expect(() => parseGrid(' ; ')).toThrow('the grid is empty');
  });

  it('expands to every combination, the defaults first and once', () => {
    const points = expandGrid([
      ['speakerBoost', [DEFAULT_RETRIEVAL_WEIGHTS.speakerBoost, 0.25]],
      ['decayWeight', [0, DEFAULT_RETRIEVAL_WEIGHTS.decayWeight]],
    ]);
    expect(points).toEqual([{}, { decayWeight: 0 }, { speakerBoost: 0.25, decayWeight: 0 }, { speakerBoost: 0.25 }]);
  });
});

describe('crossValidate', () => {
  it('assigns consecutive sorted groups to folds (LoCoMo: two conversations per fold)', () => {
    const folds = assignFolds(['c', 'a', 'd', 'b', 'a'], 2);
    expect([...folds]).toEqual([['a', 0], ['b', 0], ['c', 1], ['d', 1]]);
    expect(assignFolds(['x', 'y'], 9).size).toBe(2);
  });

  it('chooses on the training folds, scores on the held-out one, and pools the held-out scores', () => {
    // Point 1 wins on folds 0 and 1, loses on fold 2; point 0 (defaults) is flat.
    const foldOf = [0, 0, 1, 1, 2, 2];
    const defaults = foldOf.map((_, q) => found(q % 2 === 0, `q${q}`));
    const better = foldOf.map((f, q) => found(f !== 2, `q${q}`));
    const cv = crossValidate([defaults, better], foldOf, objective);
    expect(cv.inSampleChosen).toBe(1);
    // Held out fold 0: training folds 1, 2 tie (0.5 vs 0.5) → defaults kept.
    expect(cv.folds.map((f) => f.chosen)).toEqual([0, 0, 1]);
    expect(cv.folds[2]).toMatchObject({ heldOutChosen: 0, heldOutDefault: 0.5, trainObjective: 1 });
    expect(cv.heldOutScores.map((s) => s.questionId)).toEqual(['q0', 'q1', 'q2', 'q3', 'q4', 'q5']);
    expect(objective(cv.heldOutScores)).toBeCloseTo(2 / 6);
  });
});
