import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_RERANK_TOP, DEFAULT_RERANK_WEIGHT } from '../src/config.js';
import { createReranker } from '../src/embedding/create-reranker.js';
import type { Embedder } from '../src/embedding/embedder.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import { openStore } from '../src/open-service.js';
import { limitBenchmark, mergeUsers, sessionKeyOfTurn, type BenchQuestion, type Benchmark, type BenchmarkName } from './benchmark.js';
import { loadLocomo } from './datasets/locomo.js';
import { loadLongMemEval } from './datasets/longmemeval.js';
import { scoreQuestion, summarizeLatency, type QuestionScore } from './metrics.js';
import { LanceDbPeer } from './peers/lancedb-peer.js';
import { OramaPeer } from './peers/orama-peer.js';
import type { Peer } from './peers/peer.js';
import { mapConcurrent } from './pool.js';
import { Progress } from '../src/cli/progress.js';
import { planAdds, type PlannedAdd } from './replay-plan.js';
import { HttpTarget, ServiceTarget, type ReplayTarget, type SearchAnswer } from './replay-targets.js';
import { summarizeScores, type DatasetSummary, type EvalResults, type IngestSummary, type SystemResult } from './results.js';
import { describeOverrides, noOpOverrides, selectSystems, type SystemSpec } from './systems.js';

/** The platform's client: 16 Adds and 32 Searches in flight, 100 results per Search. */
export const ADD_CONCURRENCY = 16;
export const SEARCH_CONCURRENCY = 32;
export const TOP_K = 100;

export interface EvalOptions {
  benchmark: BenchmarkName;
  data: string;
  limit?: number;
  systems?: string[];
  url?: string;
  token?: string;
  /** Builds the embedder for in-process runs (unused over HTTP). */
  makeEmbedder: () => Embedder;
  embedderKind: string;
  command: string;
  /** Keep the service's data directory (its path is logged) instead of deleting it. */
  keepData?: boolean;
  /**
   * Use (and keep) this data directory. Adds are idempotent by request id, so a rerun on the same
   * data and embedder skips the embedding: for iterating on search weights, not for timing ingest.
   */
  dataDir?: string;
  /** Store the memories in this PostgreSQL database (kept afterwards, like `dataDir`) instead of a JSONL directory. */
  databaseUrl?: string;
  /** Send every message without its timestamp (see `planAdds`). */
  noTimestamps?: boolean;
  /** Store every conversation as one user's (`mergeUsers`). */
  oneUser?: boolean;
  /** The in-process service's exhaustive limit (users past it keep a graph and take candidates); default the service's. */
  exhaustiveLimit?: number;
  /** A cross-encoder the in-process service reranks each Search's best hits with (MEMORYPOOL_RERANKER_DIR's defaults). */
  rerankerDir?: string;
  log?: (line: string) => void;
  /** No progress bars (tests). */
  quiet?: boolean;
}

/** The benchmark as a run asks it: limited to its first questions, every user merged into one when asked. */
export async function benchmarkOf(options: { benchmark: BenchmarkName; data: string; limit?: number; oneUser?: boolean }): Promise<Benchmark> {
  const benchmark = limitBenchmark(await loadBenchmark(options.benchmark, options.data), options.limit);
  return options.oneUser ? mergeUsers(benchmark) : benchmark;
}

/** The in-process service's weights that change what it keeps (a graph per user past the limit). */
export function serviceWeightsOf(options: { exhaustiveLimit?: number }): { exhaustiveLimit: number } | undefined {
  return options.exhaustiveLimit === undefined ? undefined : { exhaustiveLimit: options.exhaustiveLimit };
}

export interface EvalOutput {
  results: EvalResults;
  /** Per system, per question: the ranks behind every figure. */
  questionScores: Array<{ system: string; scores: QuestionScore[] }>;
}

export async function loadBenchmark(name: BenchmarkName, path: string): Promise<Benchmark> {
  return name === 'locomo' ? loadLocomo(path) : loadLongMemEval(path);
}

export async function evaluate(options: EvalOptions): Promise<EvalOutput> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const progress: ProgressFactory = (label, total, unit) => new Progress(label, total, unit, options.quiet ? null : process.stderr);
  const started = Date.now();
  const benchmark = await benchmarkOf(options);
  const adds = benchmark.users.flatMap((user) => planAdds(user, undefined, !options.noTimestamps));
  if (options.noTimestamps) log('every message is sent without its timestamp');
  const dataset = summarizeDataset(benchmark, adds.length);
  log(`${benchmark.name}: ${dataset.users} users, ${dataset.sessions} sessions, ${dataset.turns} turns in ${adds.length} Adds; ${dataset.questions} questions`);

  const sessionOf = new Map(benchmark.users.map((user) => [user.userId, sessionKeyOfTurn(user)]));
  const score = (question: BenchQuestion, answer: SearchAnswer): QuestionScore =>
    scoreQuestion(question, answer.ranking, (turnId) => sessionOf.get(question.userId)?.get(turnId), answer.words);

  const base = {
    benchmark: benchmark.name,
    command: options.command,
    commit: gitCommit(),
    startedAt: new Date(started).toISOString(),
    data: options.data,
    limit: options.limit ?? null,
    concurrency: { adds: ADD_CONCURRENCY, searches: SEARCH_CONCURRENCY },
    topK: TOP_K,
    dataset,
  };

  if (options.url !== undefined) {
    if (options.systems?.length) log('--systems is ignored with --url: the server is measured as it is configured');
    const target = new HttpTarget(options.url, options.token, benchmark.users);
    const ingest = await ingestAll(target, adds, progress);
    const run = await runSearches('server', benchmark.questions, (question) => target.search(question, TOP_K), score, progress);
    const system: SystemResult = {
      name: 'server',
      kind: 'server',
      description: `the server at ${options.url}, through the Add/Search contract`,
      configuration: 'as the server is configured',
      status: 'ok',
      ...summarizeScores(run.scores, benchmark.categories),
      query: run.timings,
      unmappedShare: run.unmappedShare,
      matching: target.matchStats(),
    };
    return {
      results: { ...base, mode: 'http', url: options.url, ingest, systems: [system], durationSeconds: seconds(started) },
      questionScores: [{ system: 'server', scores: run.scores }],
    };
  }

  const specs = selectSystems(options.systems);
  const systems: SystemResult[] = [];
  const questionScores: EvalOutput['questionScores'] = [];
  const { ingest, embedderInfo } = await withService(options, log, async (service, embedder, dataDir) => {
    const target = new ServiceTarget(service, adds);
    const ingest = await ingestAll(target, adds, progress);
    log(`ingested ${ingest.units ?? '?'} units in ${ingest.wallSeconds.toFixed(1)} s`);
    if (ingest.alreadyStored > 0) log(`${ingest.alreadyStored} of ${adds.length} Adds were already in ${dataDir}: ingest timings do not measure ingest`);

    for (const spec of specs) {
      if (spec.kind !== 'service') continue;
      const run = await runSearches(spec.name, benchmark.questions, (question) => target.search(question, TOP_K, spec.overrides, spec.collapseDuplicates), score, progress);
      questionScores.push({ system: spec.name, scores: run.scores });
      systems.push({
        name: spec.name,
        kind: 'service',
        description: spec.description,
        configuration: describeOverrides(spec.overrides),
        noOpOverrides: noOpOverrides(spec.overrides),
        status: 'ok',
        ...summarizeScores(run.scores, benchmark.categories),
        query: run.timings,
        unmappedShare: run.unmappedShare,
      });
    }

    markSameAsHybrid(systems, questionScores);

    const peerSpecs = specs.filter((s): s is Extract<SystemSpec, { kind: 'peer' }> => s.kind === 'peer');
    if (peerSpecs.length > 0) {
      const exported: ExportedUnits = new Map();
      for (const user of benchmark.users) exported.set(user.userId, await target.exportUnits(user.userId));
      for (const spec of peerSpecs) {
        const result = await runPeer(spec, embedder, exported, benchmark, score, log, progress);
        systems.push(result.system);
        if (result.scores) questionScores.push({ system: spec.name, scores: result.scores });
      }
    }
    return { ingest, embedderInfo: { kind: options.embedderKind, modelId: embedder.modelId, dimensions: embedder.dimensions } };
  });

  return {
    results: {
      ...base,
      mode: 'in-process',
      embedder: embedderInfo,
      ingest,
      systems,
      durationSeconds: seconds(started),
    },
    questionScores,
  };
}

/**
 * Runs `use` on an in-process service over the run's data directory (a temporary one unless
 * given), then closes it and removes a temporary directory, also when interrupted: an interrupted
 * run must not leave a copy of the whole benchmark behind.
 */
export async function withService<T>(
  options: Pick<EvalOptions, 'makeEmbedder' | 'dataDir' | 'keepData' | 'databaseUrl' | 'exhaustiveLimit' | 'rerankerDir'>,
  log: (line: string) => void,
  use: (service: MemoryService, embedder: Embedder, dataDir: string) => Promise<T>,
): Promise<T> {
  const embedder = options.makeEmbedder();
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'memorypool-eval-')));
  const keepData = options.keepData || options.dataDir !== undefined;
  if (options.dataDir !== undefined) await mkdir(options.dataDir, { recursive: true });
  const onSignal = (signal: NodeJS.Signals): void => {
    if (!keepData) rmSync(dataDir, { recursive: true, force: true });
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  const store = openStore({ dataDir, databaseUrl: options.databaseUrl }, silentLogger());
  const reranker = createReranker({ rerankerDir: options.rerankerDir });
  const rerank = reranker ? { reranker, top: DEFAULT_RERANK_TOP, weight: DEFAULT_RERANK_WEIGHT } : undefined;
  const service = await MemoryService.open({ store, embedder, preload: false, indexFlushDelayMs: 0, weights: serviceWeightsOf(options), rerank });
  try {
    return await use(service, embedder, dataDir);
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await service.close();
    await Promise.all([embedder.close(), reranker?.close()]);
    if (keepData) log(`service data kept in ${dataDir}`);
    else await rm(dataDir, { recursive: true, force: true });
  }
}

export type ProgressFactory = (label: string, total: number, unit: string) => Progress;

export async function ingestAll(target: ReplayTarget, adds: readonly PlannedAdd[], makeProgress: ProgressFactory): Promise<IngestSummary> {
  const progress = makeProgress('ingest', adds.length, 'adds');
  const latencies: number[] = [];
  let units: number | undefined;
  let alreadyStored = 0;
  const started = performance.now();
  await mapConcurrent(adds, ADD_CONCURRENCY, async (add) => {
    const t0 = performance.now();
    const outcome = await target.add(add);
    latencies.push(performance.now() - t0);
    if (outcome.units !== undefined) units = (units ?? 0) + outcome.units;
    if (outcome.stored === false) alreadyStored++;
    progress.tick();
  });
  progress.finish();
  const wallSeconds = (performance.now() - started) / 1000;
  return { wallSeconds, addsPerSecond: adds.length / wallSeconds, units, alreadyStored, latency: summarizeLatency(latencies) };
}

interface SearchRun {
  scores: QuestionScore[];
  timings: NonNullable<SystemResult['query']>;
  unmappedShare: number;
}

async function runSearches(
  label: string,
  questions: readonly BenchQuestion[],
  search: (question: BenchQuestion) => Promise<SearchAnswer>,
  score: (question: BenchQuestion, answer: SearchAnswer) => QuestionScore,
  makeProgress: ProgressFactory,
): Promise<SearchRun> {
  const progress = makeProgress(`search ${label}`, questions.length, 'q');
  const latencies: number[] = [];
  let returned = 0;
  let unmapped = 0;
  const started = performance.now();
  const scores = await mapConcurrent(questions, SEARCH_CONCURRENCY, async (question) => {
    const t0 = performance.now();
    const answer = await search(question);
    latencies.push(performance.now() - t0);
    returned += answer.ranking.length;
    unmapped += answer.ranking.filter((turns) => turns.length === 0).length;
    progress.tick();
    return score(question, answer);
  });
  progress.finish();
  const wallSeconds = (performance.now() - started) / 1000;
  return {
    scores,
    timings: { ...summarizeLatency(latencies), wallSeconds, perSecond: questions.length / wallSeconds },
    unmappedShare: returned === 0 ? 0 : unmapped / returned,
  };
}

type ExportedUnits = Map<string, Awaited<ReturnType<ServiceTarget['exportUnits']>>>;

/** Builds a peer on the exported units and runs every question; a failure is reported, not fatal. */
async function runPeer(
  spec: Extract<SystemSpec, { kind: 'peer' }>,
  embedder: Embedder,
  exported: ExportedUnits,
  benchmark: Benchmark,
  score: (question: BenchQuestion, answer: SearchAnswer) => QuestionScore,
  log: (line: string) => void,
  makeProgress: ProgressFactory,
): Promise<{ system: SystemResult; scores?: QuestionScore[] }> {
  let peer: Peer | undefined;
  const system: SystemResult = { name: spec.name, kind: 'peer', description: spec.description, configuration: '', status: 'ok' };
  try {
    peer = spec.name === 'orama' ? new OramaPeer(embedder.dimensions) : new LanceDbPeer();
    system.configuration = peer.description;
    const built = performance.now();
    let units = 0;
    const progress = makeProgress(`index ${spec.name}`, exported.size, 'users');
    for (const [userId, userUnits] of exported) {
      await peer.addUser(userId, userUnits.map((unit, index) => ({ index, lexicalText: unit.lexicalText, vector: unit.vector })));
      units += userUnits.length;
      progress.tick();
    }
    progress.finish();
    system.build = { seconds: (performance.now() - built) / 1000, units };
    const ready = peer;
    let failedQueries = 0;
    let firstFailure = '';
    const run = await runSearches(spec.name, benchmark.questions, async (question) => {
      const userUnits = exported.get(question.userId) ?? [];
      // The query is encoded inside the timed call, as the service encodes its own.
      const [vector] = await embedder.embed([question.query.trim() || '?']);
      try {
        const indexes = await ready.search(question.userId, question.query, vector, TOP_K);
        return { ranking: indexes.map((index) => userUnits[index]?.turnIds ?? []) };
      } catch (error) {
        // One query the peer cannot parse scores as an empty list; it is counted, not fatal.
        failedQueries++;
        firstFailure ||= errorText(error);
        return { ranking: [] };
      }
    }, score, makeProgress);
    if (failedQueries === benchmark.questions.length && failedQueries > 0) throw new Error(`every query failed, first: ${firstFailure}`);
    if (failedQueries > 0) {
      system.error = `${failedQueries} queries failed and scored as empty results (first: ${firstFailure})`;
      log(`peer ${spec.name}: ${system.error}`);
    }
    Object.assign(system, summarizeScores(run.scores, benchmark.categories), { query: run.timings, unmappedShare: run.unmappedShare });
    return { system, scores: run.scores };
  } catch (error) {
    const message = errorText(error);
    log(`peer ${spec.name} could not run: ${message}`);
    return { system: { ...system, status: 'failed', error: message } };
  } finally {
    await peer?.close().catch(() => undefined);
  }
}

/** Flags ablations whose evidence ranks never differ from the hybrid's. */
function markSameAsHybrid(systems: SystemResult[], questionScores: EvalOutput['questionScores']): void {
  const hybrid = questionScores.find((entry) => entry.system === 'hybrid')?.scores;
  if (!hybrid) return;
  const key = (score: QuestionScore) => JSON.stringify([score.turnRanks, score.sessionRanks]);
  for (const system of systems) {
    if (system.name === 'hybrid') continue;
    const scores = questionScores.find((entry) => entry.system === system.name)?.scores;
    if (scores) system.sameAsHybrid = scores.every((score, i) => key(score) === key(hybrid[i]));
  }
}

export function summarizeDataset(benchmark: Benchmark, adds: number): DatasetSummary {
  const questionsByCategory: Record<string, number> = {};
  for (const question of benchmark.questions) questionsByCategory[question.category] = (questionsByCategory[question.category] ?? 0) + 1;
  return {
    users: benchmark.users.length,
    sessions: benchmark.users.reduce((sum, user) => sum + user.sessions.length, 0),
    turns: benchmark.users.reduce((sum, user) => sum + user.sessions.reduce((s, session) => s + session.turns.length, 0), 0),
    adds,
    questions: benchmark.questions.length,
    questionsByCategory,
    categories: benchmark.categories,
    headlineLabel: benchmark.headlineLabel,
    skipped: benchmark.skipped,
    notes: benchmark.notes,
  };
}

/** The commit the run measured, marked when the work tree differs from it. */
export function gitCommit(): string {
  try {
    const head = execFileSync('git', ['rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    // Only the code that shapes the figures counts (new files included), not stray outputs.
    const paths = ['src', 'eval', 'scripts', 'package.json', 'package-lock.json', 'tsconfig.json'];
    const dirty = execFileSync('git', ['status', '--porcelain', '--', ...paths], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty === '' ? head : `${head} (with uncommitted changes)`;
  } catch {
    return 'unknown (not a git checkout, or no commit yet)';
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

function seconds(since: number): number {
  return (Date.now() - since) / 1000;
}
