import { mkdir } from 'node:fs/promises';
import { Progress } from '../src/cli/progress.js';
import type { Embedder } from '../src/embedding/embedder.js';
import { QueryVectorCache } from '../src/embedding/query-vector-cache.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import { openStore } from '../src/open-service.js';
import { profileWeights, type RetrievalWeights } from '../src/retrieval/retrieval-config.js';
import { sessionKeyOfTurn, type BenchmarkName } from './benchmark.js';
import { assignFolds, crossValidate, expandGrid, type FoldResult, type Grid } from './cross-validate.js';
import { benchmarkOf, ingestAll, SEARCH_CONCURRENCY, serviceWeightsOf, TOP_K, type ProgressFactory } from './evaluate.js';
import { scoreQuestion, WORD_BUDGETS, type MetricSet, type QuestionScore } from './metrics.js';
import { mapConcurrent } from './pool.js';
import { planAdds } from './replay-plan.js';
import { ServiceTarget } from './replay-targets.js';
import { summarizeScores } from './results.js';
import { describeOverrides } from './systems.js';

/**
 * `npm run eval -- tune <benchmark>`: ingests once into a kept data directory (a rerun embeds
 * nothing), searches every question once per grid point (query vectors are cached, so a point
 * costs only scoring), then cross-validates the choice of point over folds of users.
 */
export interface TuneOptions {
  benchmark: BenchmarkName;
  data: string;
  dataDir: string;
  limit?: number;
  folds: number;
  grid: Grid;
  makeEmbedder: () => Embedder;
  command: string;
  /** Send every message without its timestamp (see `planAdds`). */
  noTimestamps?: boolean;
  /** Store every conversation as one user's (`mergeUsers`); folds stay over the original users. */
  oneUser?: boolean;
  /** The service's exhaustive limit: 0 keeps every user's graph, so grid points can compare candidate pools. */
  exhaustiveLimit?: number;
  log?: (line: string) => void;
  quiet?: boolean;
}

export interface PointResult {
  overrides: Partial<RetrievalWeights>;
  headline: MetricSet;
  byCategory: Record<string, MetricSet>;
}

export interface TuneResults {
  benchmark: BenchmarkName;
  command: string;
  data: string;
  startedAt: string;
  durationSeconds: number;
  grid: Grid;
  /** Point 0 is the defaults. */
  points: PointResult[];
  folds: Array<FoldResult & { users: string[]; chosenOverrides: Partial<RetrievalWeights> }>;
  /** The point best on every question, and its figures (in-sample). */
  inSample: { chosen: number; overrides: Partial<RetrievalWeights> };
  /** Every question scored by the point its training folds chose. */
  crossValidated: { headline: MetricSet; byCategory: Record<string, MetricSet> };
  /** Held-out folds where the chosen point beat / tied / lost to the defaults. */
  foldsVersusDefault: { gained: number; tied: number; lost: number };
}

/** The headline R@10 a fold maximises. */
export function headlineRecallAt10(categories: Parameters<typeof summarizeScores>[1]) {
  return (scores: readonly QuestionScore[]): number => summarizeScores(scores, categories).headline?.turn.recall[10] ?? 0;
}

export async function tune(options: TuneOptions): Promise<TuneResults> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const progress: ProgressFactory = (label, total, unit) => new Progress(label, total, unit, options.quiet ? null : process.stderr);
  const started = Date.now();
  const benchmark = await benchmarkOf(options);
  const adds = benchmark.users.flatMap((user) => planAdds(user, undefined, !options.noTimestamps));
  const points = expandGrid(options.grid, profileWeights('platform'));
  log(`${benchmark.name}: ${benchmark.users.length} users, ${benchmark.questions.length} questions; ${points.length} grid points, ${options.folds} folds`);
  const sessionOf = new Map(benchmark.users.map((user) => [user.userId, sessionKeyOfTurn(user)]));

  await mkdir(options.dataDir, { recursive: true });
  // The grid searches each question once per point: its query vector is encoded once, and kept.
  const embedder = new QueryVectorCache(options.makeEmbedder(), { maxEntries: Infinity, maxTextChars: Infinity });
  const service = await MemoryService.open({ store: openStore({ dataDir: options.dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0, weights: serviceWeightsOf(options) });
  const scores: QuestionScore[][] = [];
  try {
    const target = new ServiceTarget(service, adds);
    const ingest = await ingestAll(target, adds, progress);
    log(`ingest: ${adds.length - ingest.alreadyStored} of ${adds.length} Adds stored now, ${ingest.wallSeconds.toFixed(1)} s`);
    const bar = progress('grid', points.length * benchmark.questions.length, 'q');
    for (const overrides of points) {
      scores.push(
        await mapConcurrent(benchmark.questions, SEARCH_CONCURRENCY, async (question) => {
          const answer = await target.search(question, TOP_K, overrides);
          bar.tick();
          return scoreQuestion(question, answer.ranking, (turnId) => sessionOf.get(question.userId)?.get(turnId), answer.words);
        }),
      );
    }
    bar.finish();
  } finally {
    await service.close();
    await embedder.close();
  }

  const groupOf = (question: (typeof benchmark.questions)[number]) => question.foldGroup ?? question.userId;
  const foldOfUser = assignFolds(benchmark.questions.map(groupOf), options.folds);
  const foldOf = benchmark.questions.map((question) => foldOfUser.get(groupOf(question)) ?? 0);
  const objective = headlineRecallAt10(benchmark.categories);
  const cv = crossValidate(scores, foldOf, objective);
  const summary = (perQuestion: readonly QuestionScore[]) => {
    const summarized = summarizeScores(perQuestion, benchmark.categories);
    return { headline: summarized.headline!, byCategory: summarized.byCategory ?? {} };
  };
  const usersOfFold = (fold: number) => [...foldOfUser].filter(([, f]) => f === fold).map(([user]) => user);
  return {
    benchmark: benchmark.name,
    command: options.command,
    data: options.data,
    startedAt: new Date(started).toISOString(),
    durationSeconds: (Date.now() - started) / 1000,
    grid: options.grid,
    points: points.map((overrides, p) => ({ overrides, ...summary(scores[p]) })),
    folds: cv.folds.map((fold) => ({ ...fold, users: usersOfFold(fold.fold), chosenOverrides: points[fold.chosen] })),
    inSample: { chosen: cv.inSampleChosen, overrides: points[cv.inSampleChosen] },
    crossValidated: summary(cv.heldOutScores),
    foldsVersusDefault: {
      gained: cv.folds.filter((f) => f.heldOutChosen > f.heldOutDefault + 1e-12).length,
      tied: cv.folds.filter((f) => Math.abs(f.heldOutChosen - f.heldOutDefault) <= 1e-12).length,
      lost: cv.folds.filter((f) => f.heldOutChosen < f.heldOutDefault - 1e-12).length,
    },
  };
}

/** tune.md: the chosen weights per fold, held-out against the defaults, and every point in-sample. */
export function renderTuneReport(results: TuneResults): string {
  const pct = (value: number | undefined) => (value === undefined ? '' : (value * 100).toFixed(1));
  const categories = Object.keys(results.points[0]?.byCategory ?? {});
  const lines: string[] = [`# Cross-validated tuning: ${results.benchmark}`, ''];
  lines.push(`- Command: \`${results.command}\``, `- Started ${results.startedAt}, took ${results.durationSeconds.toFixed(0)} s`);
  lines.push(`- Grid: ${results.grid.map(([key, values]) => `${key} ∈ {${values.join(', ')}}`).join('; ')} (${results.points.length} points; defaults, as the platform's /search uses them: ${describeWeights()})`, '');
  const row = (label: string, set: { headline: MetricSet; byCategory: Record<string, MetricSet> }) =>
    `| ${label} | ${[1, 5, 10, 50].map((k) => pct(set.headline.turn.recall[k as 1])).join(' | ')} | ${categories.map((c) => pct(set.byCategory[c]?.turn.recall[10])).join(' | ')} | ${pct(set.headline.session.recallAny[5])} | ${WORD_BUDGETS.map((budget) => pct(set.headline.words?.recall[budget])).join(' | ')} |`;
  const header = [
    `| | R@1 | R@5 | R@10 | R@50 | ${categories.map((c) => `R@10 ${c}`).join(' | ')} | session any@5 | ${WORD_BUDGETS.map((budget) => `${budget} w`).join(' | ')} |`,
    `|---|---:|---:|---:|---:|${categories.map(() => '---:').join('|')}|---:|${WORD_BUDGETS.map(() => '---:').join('|')}|`,
  ];
  lines.push('## Headline', '', ...header);
  lines.push(row('defaults, in-sample', results.points[0]));
  lines.push(row(`best in-sample (${describeOverrides(results.inSample.overrides)})`, results.points[results.inSample.chosen]));
  lines.push(row('cross-validated (each fold scored with the point its training folds chose)', results.crossValidated), '');
  const v = results.foldsVersusDefault;
  lines.push(`Held-out folds where the chosen point beat the defaults: ${v.gained}, tied: ${v.tied}, lost: ${v.lost}.`, '');
  lines.push('## Folds', '', '| fold | held-out users | questions | chosen on the other folds | train R@10 | held-out R@10 chosen | held-out R@10 defaults |', '|---:|---|---:|---|---:|---:|---:|');
  for (const fold of results.folds) {
    const users = fold.users.length > 4 ? `${fold.users.slice(0, 3).join(', ')} … (${fold.users.length})` : fold.users.join(', ');
    lines.push(`| ${fold.fold} | ${users} | ${fold.questions} | ${describeOverrides(fold.chosenOverrides)} | ${pct(fold.trainObjective)} | ${pct(fold.heldOutChosen)} | ${pct(fold.heldOutDefault)} |`);
  }
  const mean = (pick: (f: FoldResult) => number) => results.folds.reduce((sum, f) => sum + pick(f), 0) / Math.max(1, results.folds.length);
  lines.push(`| mean | | | | ${pct(mean((f) => f.trainObjective))} | ${pct(mean((f) => f.heldOutChosen))} | ${pct(mean((f) => f.heldOutDefault))} |`, '');
  lines.push('## Every point, in-sample (best first)', '', ...header);
  const order = results.points.map((_, p) => p).sort((a, b) => results.points[b].headline.turn.recall[10] - results.points[a].headline.turn.recall[10] || a - b);
  for (const p of order) lines.push(row(describeOverrides(results.points[p].overrides), results.points[p]));
  lines.push('');
  return lines.join('\n');
}

function describeWeights(): string {
  return describeOverrides(Object.fromEntries(Object.entries(profileWeights('platform')).filter(([key]) => key !== 'exhaustiveLimit' && key !== 'candidatePool')));
}
