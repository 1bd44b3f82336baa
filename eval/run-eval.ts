#!/usr/bin/env node
import { mkdir, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { Command, InvalidArgumentError, Option } from 'commander';
import { createEmbedder } from '../src/embedding/create-embedder.js';
import { redactedUrl } from '../src/store/postgres-errors.js';
import type { BenchmarkName } from './benchmark.js';
import { recallChartSpec, renderSvg } from './chart.js';
import { evaluate } from './evaluate.js';
import { renderReport } from './report.js';
import { SYSTEMS } from './systems.js';
import { parseGrid } from './cross-validate.js';
import { renderTuneReport, tune } from './tune.js';
import { QA_FILES, runQa } from './qa/qa-run.js';

/**
 * `npm run eval -- <locomo|longmemeval> --data <path> --out <dir> [...]`: replays a benchmark,
 * searches every question with each system, and writes results.json, report.md and recall.svg.
 * Progress goes to stderr; stdout gets the paths written.
 */
interface CliOptions {
  data: string;
  out: string;
  limit?: number;
  systems?: string[];
  url?: string;
  token?: string;
  embedder: 'onnx' | 'hash';
  modelDir?: string;
  precision?: 'fp32' | 'int8';
  queryPrefix?: string;
  documentPrefix?: string;
  keepData?: boolean;
  dataDir?: string;
  databaseUrl?: string;
  timestamps: boolean;
  oneUser?: boolean;
  exhaustiveLimit?: number;
  rerankerDir?: string;
}

/** The embedder of an in-process run: a brought model (--model-dir) gets its prefixes. */
function localEmbedder(options: Pick<CliOptions, 'embedder' | 'modelDir' | 'precision' | 'queryPrefix' | 'documentPrefix'>) {
  return createEmbedder({ embedder: options.embedder, modelDir: options.modelDir, modelPrecision: options.precision, queryPrefix: options.queryPrefix, documentPrefix: options.documentPrefix });
}

function positiveInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed <= 0) throw new InvalidArgumentError('expected a positive integer');
  return parsed;
}

function nonNegativeInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 0) throw new InvalidArgumentError('expected an integer >= 0');
  return parsed;
}

const ONE_USER_HELP = "store every conversation as one user's and ask each question of it (recall of a user past the exhaustive limit; folds stay over the conversations)";
const EXHAUSTIVE_LIMIT_HELP = 'the in-process service keeps an HNSW graph for users past this many memories and takes candidates from it (default the service\'s, 20000; 0: every user)';

function list(value: string): string[] {
  return value.split(',').map((part) => part.trim()).filter(Boolean);
}

/** The command as typed, with any token masked, so the report can say how to reproduce it. */
function commandLine(argv: readonly string[]): string {
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--token' && i + 1 < argv.length) {
      args.push(arg, '***');
      i++;
    } else if (arg.startsWith('--token=')) {
      args.push('--token=***');
    } else if (arg === '--database-url' && i + 1 < argv.length) {
      args.push(arg, redactedUrl(argv[++i]));
    } else if (arg.startsWith('--database-url=')) {
      args.push(`--database-url=${redactedUrl(arg.slice('--database-url='.length))}`);
    } else {
      args.push(/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`);
    }
  }
  const viaNpm = process.env.npm_lifecycle_event === 'eval';
  return viaNpm ? `npm run eval -- ${args.join(' ')}` : `node ${relative(process.cwd(), process.argv[1])} ${args.join(' ')}`;
}

/** What every subcommand's replay options become, for `evaluate` and `runQa` alike. */
function replayRunOptions(options: Omit<CliOptions, 'systems'>) {
  if (options.token !== undefined && options.url === undefined) throw new InvalidArgumentError('--token needs --url');
  return {
    data: options.data,
    limit: options.limit,
    url: options.url,
    token: options.token,
    embedderKind: options.embedder,
    makeEmbedder: () => localEmbedder(options),
    command: commandLine(process.argv.slice(2)),
    keepData: options.keepData,
    dataDir: options.dataDir,
    databaseUrl: options.databaseUrl,
    noTimestamps: !options.timestamps,
    oneUser: options.oneUser,
    exhaustiveLimit: options.exhaustiveLimit,
    rerankerDir: options.rerankerDir,
  };
}

async function run(benchmark: BenchmarkName, options: CliOptions): Promise<void> {
  const started = Date.now();
  const { results, questionScores } = await evaluate({
    benchmark,
    ...replayRunOptions(options),
    systems: options.systems,
  });

  await mkdir(options.out, { recursive: true });
  const files = {
    results: join(options.out, 'results.json'),
    report: join(options.out, 'report.md'),
    chart: join(options.out, 'recall.svg'),
    questions: join(options.out, 'questions.jsonl'),
  };
  await writeFile(files.results, `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(files.report, renderReport(results));
  await writeFile(files.chart, await renderSvg(recallChartSpec(results)));
  const perQuestion = questionScores.flatMap(({ system, scores }) => scores.map((score) => JSON.stringify({ system, ...score })));
  await writeFile(files.questions, perQuestion.length > 0 ? `${perQuestion.join('\n')}\n` : '');

  for (const system of results.systems) {
    const figure = system.headline
      ? `R@10 ${(system.headline.turn.recall[10] * 100).toFixed(1)}  MRR ${system.headline.turn.mrr.toFixed(3)}`
      : `failed: ${system.error}`;
    process.stderr.write(`${system.name.padEnd(14)} ${figure}\n`);
  }
  process.stderr.write(`done in ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  process.stdout.write(`${JSON.stringify(files)}\n`);
}

/** The replay options every benchmark run takes (recall and QA alike): what is replayed, where, with which encoder. */
function replayOptions(command: Command): Command {
  return command
    .requiredOption('--data <path>', 'the benchmark data (LoCoMo JSON file, or a folder or file of LongMemEval questions)')
    .option('--limit <n>', 'only the first n questions (and the users they ask about)', positiveInt)
    .option('--url <base>', 'replay against a running server through POST <base>/add and <base>/search instead of in-process')
    .option('--token <token>', 'bearer token for --url')
    .addOption(new Option('--embedder <kind>', 'embedder for in-process runs (hash: fast, for quick checks)').choices(['onnx', 'hash']).default('onnx'))
    .option('--model-dir <dir>', 'model directory for the onnx embedder (default: the built models/ directory)')
    .option('--query-prefix <text>', 'put before each question, for a brought model trained with one (e5: "query: ")')
    .option('--document-prefix <text>', 'put before each stored text (e5: "passage: ")')
    .addOption(new Option('--precision <build>', 'build of the local model for the onnx embedder (default: the service default)').choices(['fp32', 'int8']))
    .option('--keep-data', "keep the service's temporary data directory")
    .option('--data-dir <dir>', 'use and keep this service data directory; a rerun with the same data and embedder skips the embedding (for tuning searches, not for timing ingest)')
    .option('--database-url <url>', 'store the memories in this PostgreSQL database (postgres://...) instead of a temporary JSONL directory; kept, like --data-dir')
    .option('--no-timestamps', 'send every message without its timestamp, as a client may (use a data directory of its own)')
    .option('--one-user', ONE_USER_HELP)
    .option('--exhaustive-limit <n>', EXHAUSTIVE_LIMIT_HELP, nonNegativeInt)
    .option('--reranker-dir <dir>', "a cross-encoder exported to ONNX that re-scores each Search's best 50 hits in-process (docs/configuration.md, \"A reranker you bring\")");
}

function addCommand(program: Command, name: BenchmarkName, description: string): void {
  replayOptions(program.command(name).description(description))
    .requiredOption('--out <dir>', 'directory for results.json, report.md, recall.svg and questions.jsonl')
    .option('--systems <a,b,...>', `systems to compare (default all): ${SYSTEMS.map((s) => s.name).join(', ')}`, list)
    .action((options: CliOptions) => run(name, options));
}

interface QaCliOptions extends Omit<CliOptions, 'systems'> {
  llmUrl: string;
  model: string;
  judgeModel?: string;
  apiKeyEnv?: string;
  topK: number;
  wordBudget: number;
  llmConcurrency: number;
  llmTimeout: number;
  llmRetries: number;
}

async function runQaCommand(benchmark: string, options: QaCliOptions): Promise<void> {
  if (benchmark !== 'locomo' && benchmark !== 'longmemeval') throw new InvalidArgumentError('expected locomo or longmemeval');
  const apiKey = options.apiKeyEnv === undefined ? undefined : process.env[options.apiKeyEnv];
  if (options.apiKeyEnv !== undefined && !apiKey) throw new InvalidArgumentError(`--api-key-env ${options.apiKeyEnv}: that variable is not set`);
  const results = await runQa({
    benchmark,
    ...replayRunOptions(options),
    out: options.out,
    llmUrl: options.llmUrl,
    model: options.model,
    judgeModel: options.judgeModel,
    apiKey,
    topK: options.topK,
    wordBudget: options.wordBudget,
    llmConcurrency: options.llmConcurrency,
    llmTimeoutMs: options.llmTimeout * 1000,
    llmRetries: options.llmRetries,
  });
  const j = (value: number | null) => (value === null ? '–' : value.toFixed(1));
  process.stderr.write(`J ${j(results.j)} (${results.judged} judged, ${results.failed} failed)  evidence in prompt ${j(results.evidence_in_prompt)}  ${results.calls.made} LLM calls, ${results.calls.cached} cached\n`);
  process.stdout.write(`${JSON.stringify(Object.fromEntries(Object.entries(QA_FILES).map(([key, file]) => [key, join(options.out, file)])))}\n`);
}

/** The weights `tune` searches unless `--grid` says otherwise: the terms issue 9 asks to decide by data. */
const DEFAULT_GRID = 'speakerBoost=0.15,0.25;decayWeight=0,0.05';

interface TuneCliOptions {
  data: string;
  out: string;
  dataDir: string;
  limit?: number;
  folds?: number;
  grid: string;
  embedder: 'onnx' | 'hash';
  modelDir?: string;
  precision?: 'fp32' | 'int8';
  queryPrefix?: string;
  documentPrefix?: string;
  timestamps: boolean;
  oneUser?: boolean;
  exhaustiveLimit?: number;
}

async function runTune(benchmark: string, options: TuneCliOptions): Promise<void> {
  if (benchmark !== 'locomo' && benchmark !== 'longmemeval') throw new InvalidArgumentError('expected locomo or longmemeval');
  const results = await tune({
    benchmark,
    data: options.data,
    dataDir: options.dataDir,
    limit: options.limit,
    // LoCoMo: leave two conversations out (8 dev conversations, 4 folds); LongMemEval: 4 blocks of questions.
    folds: options.folds ?? 4,
    grid: parseGrid(options.grid),
    makeEmbedder: () => localEmbedder(options),
    command: commandLine(process.argv.slice(2)),
    noTimestamps: !options.timestamps,
    oneUser: options.oneUser,
    exhaustiveLimit: options.exhaustiveLimit,
  });
  await mkdir(options.out, { recursive: true });
  const files = { results: join(options.out, 'tune.json'), report: join(options.out, 'tune.md') };
  await writeFile(files.results, `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(files.report, renderTuneReport(results));
  const r10 = (value: number) => (value * 100).toFixed(1);
  process.stderr.write(
    `defaults R@10 ${r10(results.points[0].headline.turn.recall[10])}  best in-sample R@10 ${r10(results.points[results.inSample.chosen].headline.turn.recall[10])}  cross-validated R@10 ${r10(results.crossValidated.headline.turn.recall[10])}\n`,
  );
  process.stdout.write(`${JSON.stringify(files)}\n`);
}

const program = new Command('run-eval')
  .description('Evidence-recall benchmarks for memorypool: replays, ablations and peers side by side')
  .showHelpAfterError();
addCommand(program, 'locomo', 'LoCoMo: a JSON array of conversations (e.g. ../shared/datasets/locomo10-dev.json)');
addCommand(program, 'longmemeval', 'LongMemEval: one question per file, or a file of questions');

replayOptions(
  program
    .command('qa')
    .description('The QA score: each question\'s top memories go to an answer model, a judge model grades the answer against the gold one (CORRECT/WRONG); J overall and per category')
    .argument('<benchmark>', 'locomo or longmemeval'),
)
  .requiredOption('--out <dir>', 'directory for qa.json, qa.md, qa-questions.jsonl and the reply cache qa-cache.jsonl (beside the recall report, if you like)')
  .requiredOption('--llm-url <base>', 'OpenAI-compatible base URL (e.g. http://host/v1); POST <base>/chat/completions is called')
  .requiredOption('--model <name>', 'answer model')
  .option('--judge-model <name>', 'judge model (default: the answer model)')
  .option('--api-key-env <VAR>', 'environment variable holding the API key, sent as a bearer token (the key itself never goes on the command line)')
  .option('--top-k <n>', 'memories in the answer prompt, at most', positiveInt, 10)
  .option('--word-budget <n>', 'words of memory content in the answer prompt, at most (the first memory always goes in)', positiveInt, 1000)
  .option('--llm-concurrency <n>', 'questions in flight at the LLM endpoint', positiveInt, 4)
  .option('--llm-timeout <seconds>', 'per LLM request; a timeout is retried', positiveInt, 120)
  .option('--llm-retries <n>', 'retries of an LLM request after a 429, 5xx or timeout (429 waits for its retry-after)', nonNegativeInt, 6)
  .action((benchmark: string, options: QaCliOptions) => runQaCommand(benchmark, options));

program
  .command('tune')
  .description('Cross-validated tuning: one ingest, every grid point searched once, the choice made on training folds and scored on held-out ones')
  .argument('<benchmark>', 'locomo or longmemeval')
  .requiredOption('--data <path>', 'the benchmark data, as for the other subcommands')
  .requiredOption('--out <dir>', 'directory for tune.json and tune.md')
  .requiredOption('--data-dir <dir>', 'service data directory, kept: a rerun embeds nothing and only scores')
  .option('--limit <n>', 'only the first n questions (and the users they ask about)', positiveInt)
  .option('--folds <k>', 'folds over users (LoCoMo conversations, LongMemEval questions); default 4', positiveInt)
  .option('--grid <axes>', 'weights and their values, e.g. "speakerBoost=0.15,0.25;decayWeight=0,0.05"', DEFAULT_GRID)
  .addOption(new Option('--embedder <kind>', 'embedder (hash: fast, for quick checks)').choices(['onnx', 'hash']).default('onnx'))
  .option('--model-dir <dir>', 'model directory for the onnx embedder')
  .option('--query-prefix <text>', 'put before each question, for a brought model trained with one (e5: "query: ")')
  .option('--document-prefix <text>', 'put before each stored text (e5: "passage: ")')
  .addOption(new Option('--precision <build>', 'build of the local model for the onnx embedder (default: the service default); use the one the data directory was embedded with').choices(['fp32', 'int8']))
  .option('--no-timestamps', 'send every message without its timestamp (use a data directory of its own)')
  .option('--one-user', ONE_USER_HELP)
  .option('--exhaustive-limit <n>', EXHAUSTIVE_LIMIT_HELP, nonNegativeInt)
  .action((benchmark: string, options: TuneCliOptions) => runTune(benchmark, options));

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`run-eval: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
