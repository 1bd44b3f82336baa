import { DEFAULT_RETRIEVAL_WEIGHTS, type RetrievalWeights } from '../src/retrieval/retrieval-config.js';
import type { QuestionScore } from './metrics.js';

/**
 * Cross-validated choice of weights, as pure functions of per-question scores: every grid point
 * is searched once over every question, then each fold picks the point that is best on the
 * other folds' questions and is scored on its own. Nothing is searched twice.
 */

export type WeightKey = keyof RetrievalWeights;
export type Grid = Array<[WeightKey, number[]]>;

/** `speakerBoost=0.15,0.25;decayWeight=0,0.05` → the axes of a grid, each a known weight. */
export function parseGrid(text: string): Grid {
  const axes: Grid = [];
  for (const part of text.split(';').map((p) => p.trim()).filter(Boolean)) {
    const [key, values] = part.split('=');
    if (!(key in DEFAULT_RETRIEVAL_WEIGHTS)) throw new Error(`unknown weight "${key}" in the grid; known: ${Object.keys(DEFAULT_RETRIEVAL_WEIGHTS).join(', ')}`);
    const numbers = (values ?? '').split(',').map((v) => Number(v.trim()));
    if (numbers.length === 0 || numbers.some((n) => !Number.isFinite(n))) throw new Error(`"${part}": expected ${key}=<number>,<number>...`);
    axes.push([key as WeightKey, numbers]);
  }
  if (axes.length === 0) throw new Error('the grid is empty');
  return axes;
}

/**
 * Every combination of the axes' values, as overrides of the defaults. The defaults come first
 * (they win ties: a change must beat them, not merely equal them), and no point appears twice.
 */
export function expandGrid(axes: Grid, defaults: Readonly<RetrievalWeights> = DEFAULT_RETRIEVAL_WEIGHTS): Array<Partial<RetrievalWeights>> {
  let points: Array<Partial<RetrievalWeights>> = [{}];
  for (const [key, values] of axes) {
    points = points.flatMap((point) => values.map((value) => (value === defaults[key] ? point : { ...point, [key]: value })));
  }
  // The defaults' key: a point with no overrides is never added a second time.
  const seen = new Set<string>([JSON.stringify([])]);
  const out: Array<Partial<RetrievalWeights>> = [{}];
  for (const point of points) {
    const key = JSON.stringify(Object.entries(point).sort());
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(point);
  }
  return out;
}

/** Groups (sorted) into k folds of consecutive groups: LoCoMo conversations two by two, LongMemEval questions in blocks. */
export function assignFolds(groups: readonly string[], k: number): Map<string, number> {
  const sorted = [...new Set(groups)].sort();
  const folds = Math.max(2, Math.min(k, sorted.length));
  const size = Math.ceil(sorted.length / folds);
  return new Map(sorted.map((group, i) => [group, Math.floor(i / size)]));
}

export interface FoldResult {
  fold: number;
  /** Questions held out. */
  questions: number;
  /** Index of the grid point the training folds chose. */
  chosen: number;
  trainObjective: number;
  heldOutChosen: number;
  heldOutDefault: number;
}

export interface CrossValidation {
  folds: FoldResult[];
  /** Each question scored by the point chosen without it: the cross-validated figures come from these. */
  heldOutScores: QuestionScore[];
  /** The point best on every question (the in-sample choice). */
  inSampleChosen: number;
}

/**
 * `scores[p][q]` is question q's score under grid point p (the same question order for every
 * point), `foldOf[q]` its fold; `objective` maps a set of question scores to the figure to
 * maximise. Ties go to the lower index (point 0 is the defaults).
 */
export function crossValidate(
  scores: ReadonlyArray<readonly QuestionScore[]>,
  foldOf: readonly number[],
  objective: (scores: readonly QuestionScore[]) => number,
): CrossValidation {
  const best = (pick: (q: number) => boolean): { index: number; value: number } => {
    let index = 0;
    let value = -Infinity;
    scores.forEach((perQuestion, p) => {
      const v = objective(perQuestion.filter((_, q) => pick(q)));
      if (v > value + 1e-12) {
        value = v;
        index = p;
      }
    });
    return { index, value };
  };
  const foldIds = [...new Set(foldOf)].sort((a, b) => a - b);
  const heldOutScores: QuestionScore[] = new Array(foldOf.length);
  const folds = foldIds.map((fold): FoldResult => {
    const chosen = best((q) => foldOf[q] !== fold);
    const heldOut = (p: number) => scores[p].filter((_, q) => foldOf[q] === fold);
    foldOf.forEach((f, q) => {
      if (f === fold) heldOutScores[q] = scores[chosen.index][q];
    });
    return {
      fold,
      questions: foldOf.filter((f) => f === fold).length,
      chosen: chosen.index,
      trainObjective: chosen.value,
      heldOutChosen: objective(heldOut(chosen.index)),
      heldOutDefault: objective(heldOut(0)),
    };
  });
  return { folds, heldOutScores, inSampleChosen: best(() => true).index };
}
