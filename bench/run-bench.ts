/**
 * Load, latency and memory figures of the real server (bench/README.md says what each means).
 *
 *   npm run bench -- [--out <dir>] [--quick] [--locomo <file>] [--precision fp32|int8] [--processes <n>] [--threads <n>] [--profile] [--keep]
 *   npm run bench -- --replicas <n> [--database-url <postgres://...>] [same options]
 *   npm run bench -- --growth [--quick] [same options]   (one user of 10k, 100k, 1M memories: bench/growth.ts)
 *   npm run bench -- --many-users [--quick] [same options]   (100k users of 10-50 memories, 10k in --quick: bench/many-users.ts)
 *   npm run bench -- --memory-parts [--sizes 10000,100000] [--out <dir>]   (RSS per extra memory, part by part: bench/memory-parts.ts)
 *
 * Starts `node dist/src/main.js` on a loopback port with a temporary data directory, drives it
 * over HTTP, prints a JSON summary on stdout (progress goes to stderr) and writes it to
 * `<dir>/bench.json`. A missed target is a figure, not a failure: the exit code is 0 unless the
 * bench itself could not run. With `--replicas`, the scale-out figures instead (bench/replicas.ts),
 * written to `<dir>/bench-replicas.json`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { OnnxEmbedder } from '../src/embedding/onnx-embedder.js';
import { ADD_CLIENTS, measureAdd, measureEncoder, summarizeEncoder, threadCpuMsPer, threadCpuSeconds } from './add-phase.js';
import { cpuMsPer, cpuText } from './cpu-figures.js';
import { checkAdd, checkSearch, latencyStats, LoopbackClient, round, runLoad, type LoadResult } from './http-load.js';
import { measureAppendLock, measureFreshnessCheck } from './freshness-check.js';
import { measureHostileLoad } from './hostile-load.js';
import { GROWTH_PLANS, GROWTH_SIZES, measureGrowth } from './growth.js';
import { MANY_USERS_PLANS, measureManyUsers } from './many-users.js';
import { measureMemoryParts, parseSizes } from './memory-parts.js';
import { runReplicaBench } from './replicas.js';
import { removeIndexCaches, writeScaleStore } from './scale-store.js';
import { benchPrecision, benchProcesses, serverEncoder, serverEncoderStack, serverEncoderThreads, useBenchPrecision, useBenchProcesses, useBenchThreads, benchThreads } from './server-encoder.js';
import { MODEL_PRECISIONS } from '../src/embedding/onnx-embedder.js';
import { ServerProcess, startCpuWatch, waitForFirstAnswer, type CpuShare } from './server-process.js';
import { addChunks, DEFAULT_LOCOMO, sessionAdds, strided, loadWorkload, type Conversation, type Workload } from './workload.js';

const PACKAGE_ROOT = path.resolve(fileURLToPath(new URL('../..', import.meta.url)));
const TOP_K = 100;
const SEARCH_CLIENTS = [32, 256] as const;
const SCALE_SIZES = [10_000, 100_000] as const;
/** A handful of users of 2k and 20k memories: all within the service's exhaustive-scoring limit (20k). */
const SCALE_USERS = 5;
const MB = 1024 * 1024;
/** The pause before each query of `encode_alone.paced`: about what the rest of a sequential Search takes. */
const ENCODE_PACE_MS = 3;


export interface Plan {
  addRequests: number;
  addUsers: number;
  /** Add bodies (a stride of the Add phase's) the bare encoder encodes one Add per call. */
  encoderPerAddRequests: number;
  searchUsers: number;
  searchWarmup: number;
  searchSequential: number;
  searchSeconds: number;
  coldStartRuns: number;
  /** Sizes whose start without index caches (rebuilt from the JSONL) is measured too. */
  rebuildSizes: number[];
  rebuildTimeoutMs: number;
  /** Freshness checks timed after the sequential Search phase (bench/freshness-check.ts). */
  freshnessChecks: number;
}

const PLANS: Record<'quick' | 'full', Plan> = {
  quick: {
    addRequests: 80,
    addUsers: 128,
    encoderPerAddRequests: 8,
    searchUsers: 2,
    searchWarmup: 50,
    searchSequential: 200,
    searchSeconds: 6,
    coldStartRuns: 1,
    rebuildSizes: [],
    rebuildTimeoutMs: 0,
    freshnessChecks: 5_000,
  },
  full: {
    addRequests: 320,
    addUsers: 128,
    encoderPerAddRequests: 64,
    searchUsers: 5,
    searchWarmup: 200,
    searchSequential: 1000,
    searchSeconds: 20,
    coldStartRuns: 2,
    rebuildSizes: [10_000, 100_000],
    rebuildTimeoutMs: 8 * 60_000,
    freshnessChecks: 20_000,
  },
};

const benchStarted = performance.now();
/** Things that make a figure mean something other than it says, repeated in the summary. */
const warnings: string[] = [];

function warn(message: string): void {
  warnings.push(message);
  progress(`WARNING: ${message}`);
}

/** The temporary data directories, removed on the way out (unless --keep), interrupted or not. */
let scratchDir: string | null = null;

function progress(message: string): void {
  process.stderr.write(`[bench ${((performance.now() - benchStarted) / 1000).toFixed(0).padStart(4)}s] ${message}\n`);
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      out: { type: 'string' },
      quick: { type: 'boolean', default: false },
      locomo: { type: 'string' },
      profile: { type: 'boolean', default: false },
      keep: { type: 'boolean', default: false },
      replicas: { type: 'string' },
      'database-url': { type: 'string' },
      precision: { type: 'string' },
      processes: { type: 'string' },
      threads: { type: 'string' },
      growth: { type: 'boolean', default: false },
      'many-users': { type: 'boolean', default: false },
      'memory-parts': { type: 'boolean', default: false },
      sizes: { type: 'string' },
    },
  });
  const replicas = values.replicas === undefined ? null : Number(values.replicas);
  if (replicas !== null && (!Number.isInteger(replicas) || replicas < 1)) throw new Error(`--replicas: expected a positive integer, got ${values.replicas}`);
  if (replicas === null && values['database-url'] !== undefined) throw new Error('--database-url needs --replicas <n>');
  if (values.sizes !== undefined && !values['memory-parts']) throw new Error('--sizes needs --memory-parts');
  if (values.precision !== undefined) {
    const precision = MODEL_PRECISIONS.find((entry) => entry === values.precision);
    if (precision === undefined) throw new Error(`--precision: expected one of ${MODEL_PRECISIONS.join(', ')}, got ${values.precision}`);
    useBenchPrecision(precision);
  }
  if (values.threads !== undefined) {
    const threads = Number(values.threads);
    if (!Number.isInteger(threads) || threads < 0) throw new Error(`--threads: expected a whole number, got ${values.threads}`);
    useBenchThreads(threads);
  }
  if (values.processes !== undefined) {
    const processes = Number(values.processes);
    if (!Number.isInteger(processes) || processes < 1) throw new Error(`--processes: expected a positive integer, got ${values.processes}`);
    useBenchProcesses(processes);
  }
  const mode = values.quick ? 'quick' : 'full';
  const plan = PLANS[mode];
  const outDir = path.resolve(values.out ?? path.join(PACKAGE_ROOT, '.bench-out')); // git-ignored
  await mkdir(outDir, { recursive: true });
  const nodeArgs = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(outDir, 'profiles')}`] : [];
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-bench-'));
  if (!values.keep) scratchDir = workDir;
  const startedAt = new Date().toISOString();
  // Read at the start: others may commit while the bench runs (dist/ is what actually runs: build, then bench).
  const commit = git(['rev-parse', '--short', 'HEAD']);
  const uncommittedSrcFiles = git(['status', '--porcelain', '--', 'src']).split('\n').filter(Boolean).length;
  const loadAtStart = os.loadavg();
  // A file asked for (the flag or MEMORYPOOL_BENCH_LOCOMO) must exist; the default may not (generated texts then).
  const asked = values.locomo ?? process.env.MEMORYPOOL_BENCH_LOCOMO;
  if (asked !== undefined && !existsSync(asked)) throw new Error(`no LoCoMo file at ${asked}`);
  const workload = await loadWorkload(values.locomo ?? DEFAULT_LOCOMO);
  progress(`${mode} run; texts: ${workload.source}${workload.path ? ` (${workload.path})` : ''}; data in ${workDir}; load ${loadAtStart[0].toFixed(2)}`);

  const header = (command: string) => ({
    mode,
    command,
    commit,
    uncommitted_src_files: uncommittedSrcFiles,
    started_at: startedAt,
    duration_s: round((performance.now() - benchStarted) / 1000, 1),
    machine: {
      cpus: os.cpus().length,
      cpu_model: os.cpus()[0]?.model ?? 'unknown',
      memory_gb: round(os.totalmem() / 1024 ** 3, 1),
      node: process.version,
      load_avg_at_start: loadAtStart.map((value) => round(value, 2)),
      load_avg_at_end: os.loadavg().map((value) => round(value, 2)),
    },
    model_precision: benchPrecision(),
    server_processes: benchProcesses(),
    service_threads: benchThreads(),
    texts: { source: workload.source, conversations: workload.conversations.length },
  });

  try {
    if (replicas !== null) {
      const result = await runReplicaBench({ replicas, databaseUrl: values['database-url'], mode, workload, workDir, nodeArgs, progress, warn });
      const command = `npm run bench -- --replicas ${replicas}${values['database-url'] ? ' --database-url <url>' : ''}${values.quick ? ' --quick' : ''}${values.precision ? ` --precision ${values.precision}` : ''}${values.processes ? ` --processes ${values.processes}` : ''}${values.out ? ` --out ${values.out}` : ''}`;
      const summary = { bench: 'memorypool-replicas', ...header(command), warnings, ...result };
      await writeFile(path.join(outDir, 'bench-replicas.json'), JSON.stringify(summary, null, 2) + '\n');
      process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
      progress(`done in ${summary.duration_s} s; ${result.targets.filter((entry) => entry.result === 'pass').length}/${result.targets.length} targets met; wrote ${path.join(outDir, 'bench-replicas.json')}`);
      return;
    }
    // ---- Growth with one user's size (bench/growth.ts): `--growth` runs it alone, `--quick` its short form at the end.
    if (values.growth) {
      const growth = await measureGrowth({ workDir, workload, sizes: GROWTH_SIZES[mode], plan: GROWTH_PLANS[mode], nodeArgs, progress, warn });
      const command = `npm run bench -- --growth${values.quick ? ' --quick' : ''}${values.precision ? ` --precision ${values.precision}` : ''}${values.processes ? ` --processes ${values.processes}` : ''}${values.out ? ` --out ${values.out}` : ''}`;
      const summary = { bench: 'memorypool-growth', ...header(command), targets: growth!.targets, warnings, growth };
      await writeFile(path.join(outDir, 'bench-growth.json'), JSON.stringify(summary, null, 2) + '\n');
      process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
      for (const line of growth!.table) progress(line);
      for (const row of growth!.targets) progress(`${row.result.padEnd(12)} ${row.id}: ${row.value} ${row.unit} (${row.target}; ${row.note})`);
      progress(`done in ${summary.duration_s} s; wrote ${path.join(outDir, 'bench-growth.json')}`);
      return;
    }
    // ---- end of growth
    // ---- Many users (bench/many-users.ts): `--many-users` runs it alone, `--quick` its short form (10k users) at the end.
    if (values['many-users']) {
      const manyUsers = await measureManyUsers({ workDir, workload, plan: MANY_USERS_PLANS[mode], nodeArgs, progress, warn });
      const command = `npm run bench -- --many-users${values.quick ? ' --quick' : ''}${values.out ? ` --out ${values.out}` : ''}`;
      const summary = { bench: 'memorypool-many-users', ...header(command), targets: manyUsers.targets, warnings, many_users: manyUsers };
      await writeFile(path.join(outDir, 'bench-many-users.json'), JSON.stringify(summary, null, 2) + '\n');
      process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
      for (const line of manyUsers.table) progress(line);
      for (const row of manyUsers.targets) progress(`${row.result.padEnd(12)} ${row.id}: ${row.value} ${row.unit} (${row.target}; ${row.note})`);
      progress(`done in ${summary.duration_s} s; wrote ${path.join(outDir, 'bench-many-users.json')}`);
      return;
    }
    // ---- end of many users
    // ---- Memory per memory, part by part (bench/memory-parts.ts): `--memory-parts` runs it alone.
    if (values['memory-parts']) {
      const parts = await measureMemoryParts({ workDir, workload, sizes: parseSizes(values.sizes), progress });
      const command = `npm run bench -- --memory-parts${values.sizes ? ` --sizes ${values.sizes}` : ''}${values.out ? ` --out ${values.out}` : ''}`;
      const summary = { bench: 'memorypool-memory-parts', ...header(command), warnings, memory_parts: parts };
      await writeFile(path.join(outDir, 'bench-memory-parts.json'), JSON.stringify(summary, null, 2) + '\n');
      process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
      for (const line of parts.table) progress(line);
      progress(`done in ${summary.duration_s} s; wrote ${path.join(outDir, 'bench-memory-parts.json')}`);
      return;
    }
    // ---- end of memory parts

    const addBodies = addChunks(workload, plan.addRequests, plan.addUsers);
    // As many Adds as the clients have in flight at once: what a server batching across requests could sort and encode together.
    const encoderBodies = strided(addBodies, ADD_CLIENTS);
    // The bare encoder runs on as many threads as the server's; the single-query floor on this thread.
    const encoderStack = serverEncoderStack();
    const embedder = serverEncoder();
    const encoderBefore = await measureEncoder(encoderStack, encoderBodies, plan.encoderPerAddRequests, progress);

    const serviceDir = path.join(workDir, 'service');
    const server = await ServerProcess.start({ dataDir: serviceDir, nodeArgs });
    const client = new LoopbackClient(server.url, 256);
    const startMs = await waitForFirstAnswer(server, client, () => ({ query: 'warm-up', user_id: 'nobody', top_k: 1 }), 120_000, () => true);
    progress(`server up in ${startMs} ms (pid ${server.pid})`);
    const add = await measureAdd(server, client, addBodies, progress);
    // Measured again after the Add phase: the machine is shared, and the mean of the two brackets its drift.
    const encoderAfter = await measureEncoder(encoderStack, encoderBodies, plan.encoderPerAddRequests, progress);
    await encoderStack.close();
    const search = await measureSearch(server, client, workload, plan);
    const searchProcesses = await measureSearchProcesses(serviceDir, nodeArgs, plan, search);
    const freshness = await measureFreshnessCheck(serviceDir, search.users.map((user) => user.user_id), search.sequential.latency_ms.p50, plan.freshnessChecks);
    progress(`freshness check: ${freshness.mean_us} µs a cached user (p50 of batches ${freshness.p50_us} µs), ${round(freshness.ratio_to_cached_search * 100, 2)}% of a cached Search (p50 ${freshness.search_p50_ms} ms)`);
    const appendLock = await measureAppendLock(path.join(workDir, 'append-lock'), plan.freshnessChecks / 25);
    progress(`append: p50 ${appendLock.file_only_p50_ms} ms the file alone, ${appendLock.with_lock_p50_ms} ms with the user's lock (+${appendLock.lock_overhead_p50_ms} ms)`);
    const encodeAlone = await measureEncodeAlone(embedder, search.sequential_queries);
    await embedder.close();
    progress('hostile load: ordinary Searches while one client keeps a hostile request in flight');
    const hostile = await measureHostileLoad(server, {
      userIds: search.users.map((user) => user.user_id),
      questions: workload.conversations.flatMap(questionsOf),
      clients: 4,
      windowMs: (mode === 'quick' ? 4 : 10) * 1000,
      topK: TOP_K,
      log: progress,
    });
    const serviceMemory = server.memory();
    client.close();
    const serviceStop = await server.stop();
    progress(`service server stopped: exit ${serviceStop.code ?? serviceStop.signal} in ${serviceStop.stop_ms} ms`);

    const scale = [];
    for (const size of SCALE_SIZES) scale.push(await measureScale(workDir, workload, size, plan, nodeArgs));

    // ---- Growth, short form (bench/growth.ts): quick runs only; `--growth` runs the full form alone.
    const growth = mode === 'quick' ? await measureGrowth({ workDir, workload, sizes: GROWTH_SIZES.quick, plan: GROWTH_PLANS.quick, nodeArgs, progress, warn }) : null;
    if (growth) for (const line of growth.table) progress(line);
    // ---- end of growth
    // ---- Many users, short form (bench/many-users.ts): quick runs only; `--many-users` runs the full form alone.
    const manyUsers = mode === 'quick' ? await measureManyUsers({ workDir, workload, plan: MANY_USERS_PLANS.quick, nodeArgs, progress, warn }) : null;
    if (manyUsers) for (const line of manyUsers.table) progress(line);
    // ---- end of many users

    const encoder = summarizeEncoder(encoderBefore, encoderAfter);
    const addRatio = add.messages_per_s / encoder.messages_per_s;
    const errors = add.load.errors + search.ingest_errors + search.warmup.errors + search.sequential.errors +
      search.concurrent.reduce((sum, phase) => sum + phase.errors + phase.connect_burst.errors, 0) +
      (searchProcesses?.concurrent ?? []).reduce((sum, phase) => sum + phase.errors + phase.connect_burst.errors, 0) +
      scale.reduce((sum, entry) => sum + entry.search_errors, 0);
    const single = search.sequential.latency_ms.p50;
    const encodeP50 = encodeAlone.latency_ms.p50;
    const at32 = search.concurrent.find((phase) => phase.concurrency === 32)?.per_s ?? NaN;
    const big = scale.find((entry) => entry.memories === 100_000);
    // The rows of issue 12's table, in its order.
    const searchAt32 = search.concurrent.find((phase) => phase.concurrency === 32);
    const cores = os.availableParallelism();
    const serverCores = searchAt32?.cpu.server_cores ?? NaN;
    const cpuPerSearch = searchAt32?.server_cpu_ms_per_request ?? NaN;
    const encoderCpuPerQuery = encodeAlone.cpu_ms_per_query;
    const coldStart = big?.cold_start_ms ?? NaN;
    // Issue 20's targets: ratios of figures taken in this run, so that they hold on any machine of the kind.
    const targets = [
      target('zero_errors', 'no error at any concurrency', errors, 'errors', errors === 0),
      target(
        'search_32_clients_cores',
        `server CPU at 32 Search clients >= 90% of the machine's ${cores} cores`,
        round(serverCores, 2),
        'cores',
        serverCores >= 0.9 * cores,
        `${at32} req/s, ${serverEncoderThreads()} encoder threads; the bench's own clients took ${searchAt32?.cpu.bench_cores ?? NaN} cores and everything else ${searchAt32?.cpu.other_cores ?? NaN}; server CPU ms a Search by thread ${JSON.stringify(searchAt32?.server_cpu_ms_per_request_by_thread ?? {})}`,
      ),
      ...(searchProcesses
        ? (() => {
            const at32Processes = searchProcesses.concurrent.find((phase) => phase.concurrency === 32);
            const processCores = at32Processes?.cpu.server_cores ?? NaN;
            return [
              target(
                'search_32_clients_cores_processes',
                `the same with MEMORYPOOL_PROCESSES=${searchProcesses.processes}: server CPU at 32 Search clients >= 90% of the ${cores} cores`,
                round(processCores, 2),
                'cores',
                processCores >= 0.9 * cores,
                `${at32Processes?.per_s ?? NaN} req/s against ${at32} with one process; the bench's own clients took ${at32Processes?.cpu.bench_cores ?? NaN} cores and everything else ${at32Processes?.cpu.other_cores ?? NaN}; server CPU ms a Search by thread ${JSON.stringify(at32Processes?.server_cpu_ms_per_request_by_thread ?? {})}`,
              ),
            ];
          })()
        : []),
      target(
        'search_cpu_vs_encoder_cpu',
        'server CPU per Search at 32 clients <= 1.5 x the encoder\'s CPU per query alone + 0.5 ms',
        round(cpuPerSearch / encoderCpuPerQuery, 2),
        'ratio',
        cpuPerSearch <= 1.5 * encoderCpuPerQuery + 0.5,
        `${cpuPerSearch} ms a Search, ${encoderCpuPerQuery} ms a query encoded alone: the target is ${round(1.5 * encoderCpuPerQuery + 0.5, 2)} ms`,
      ),
      target(
        'search_single_client_p50_vs_encoding',
        'single-client Search p50 <= 1.5 x the same queries\' encoding time alone + 1 ms',
        round(single / encodeP50, 2),
        'ratio',
        single <= 1.5 * encodeP50 + 1,
        `Search p50 ${single} ms, encoding alone p50 ${encodeP50} ms (${encodeAlone.paced.latency_ms.p50} ms with ${ENCODE_PACE_MS} ms between queries): the target is ${round(1.5 * encodeP50 + 1, 2)} ms`,
      ),
      target(
        'add_throughput_vs_encoder',
        `Add messages/s >= 0.90 x the bare encoder on the server's ${serverEncoderThreads()} encoder threads`,
        round(addRatio, 3),
        'ratio',
        addRatio >= 0.9,
        `${add.messages_per_s} messages/s against ${encoder.messages_per_s}`,
      ),
      target(
        'cold_start_100k_vs_empty_start',
        'spawn -> first Search answered with 100k memories <= 2 x the same with an empty data directory',
        round(coldStart / startMs, 2),
        'ratio',
        coldStart <= 2 * startMs,
        `${coldStart} ms with 100k memories, ${startMs} ms empty`,
      ),
      target('resident_100k', 'RSS < 700 MiB with 100k memories', big?.rss_mb ?? NaN, 'MiB', (big?.rss_mb ?? Infinity) < 700),
      target(
        'freshness_check_vs_cached_search',
        'the per-request freshness check of a cached user <= 5% of a cached Search (JSONL, several processes on one data directory)',
        freshness.ratio_to_cached_search,
        'ratio',
        freshness.ratio_to_cached_search <= 0.05,
        `${freshness.mean_us} µs a check, Search p50 ${freshness.search_p50_ms} ms`,
      ),
      target('hostile_search_p95', `ordinary Search p95 with one hostile request in flight < 2x idle p95 (worst: ${hostile.worst_target_id})`, hostile.worst_target_ratio, 'x idle p95', hostile.worst_target_ratio < 2),
      ...(growth?.targets ?? []), // growth (bench/growth.ts)
      ...(manyUsers?.targets ?? []), // many users (bench/many-users.ts)
    ];
    const per = scale.length === 2 ? (scale[1].rss_bytes - scale[0].rss_bytes) / (scale[1].memories - scale[0].memories) : NaN;

    const summary = {
      bench: 'memorypool',
      ...header(`npm run bench --${values.quick ? ' --quick' : ''}${values.precision ? ` --precision ${values.precision}` : ''}${values.processes ? ` --processes ${values.processes}` : ''}${values.out ? ` --out ${values.out}` : ''}`),
      targets,
      warnings,
      add: {
        clients: ADD_CLIENTS,
        messages_per_request: 20,
        messages_per_s: add.messages_per_s,
        bare_encoder_messages_per_s: encoder.messages_per_s,
        ratio_to_bare_encoder: round(addRatio, 3),
        ratio_to_bare_encoder_per_add_call: round(add.messages_per_s / encoder.per_add_call_messages_per_s, 3),
        server_cpu_ms_per_message: add.cpu_ms_per_message,
        server_cpu_ms_per_message_by_thread: add.cpu_ms_per_message_by_thread,
        bare_encoder_cpu_ms_per_message: encoder.cpu_ms_per_message,
        cpu_ratio_bare_to_service: round(encoder.cpu_ms_per_message / add.cpu_ms_per_message, 3),
        ...add.load,
        cpu: add.cpu,
        server_rss_mb_after: add.rss_mb,
        // From a burst of Adds to the server's every encoder copy up (before the figure: add-phase.ts, encoderCopiesUp).
        encoder_copies_up_ms: add.encoder_copies_up_ms,
      },
      encoder,
      search: { ...search, next: undefined, counted: undefined, sequential_queries: search.sequential_queries.length, encode_alone: encodeAlone, server_rss_mb_after: serviceMemory.rss_mb },
      /** The same concurrent Searches served by one process per core (null on one core or under --processes). */
      search_processes: searchProcesses,
      freshness_check: freshness,
      append_lock: appendLock,
      hostile,
      scale: {
        users: SCALE_USERS,
        stores: scale,
        marginal_bytes_per_memory: round(per, 0),
        note: 'marginal = (RSS at 100k - RSS at 10k) / 90k: what one more stored memory costs in RAM, the model and runtime excluded',
      },
      growth, // bench/growth.ts: null in full runs (`--growth` runs it alone)
      many_users: manyUsers, // bench/many-users.ts: null in full runs (`--many-users` runs it alone)
      server_exit: serviceStop,
      server_log: server.logLines.slice(0, 20),
      profiles: values.profile ? path.join(outDir, 'profiles') : null,
    };
    await writeFile(path.join(outDir, 'bench.json'), JSON.stringify(summary, null, 2) + '\n');
    process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
    for (const row of targets) progress(`${row.result.padEnd(12)} ${row.id}: ${row.value} ${row.unit} (${row.target})${row.note ? `: ${row.note}` : ''}`);
    progress(`done in ${summary.duration_s} s; ${targets.filter((entry) => entry.result === 'pass').length}/${targets.length} targets met; wrote ${path.join(outDir, 'bench.json')}`);
  } finally {
    await ServerProcess.stopAll();
    if (values.keep) progress(`kept ${workDir}`);
    else await removeScratch();
  }
}

// ---------------------------------------------------------------------------------------------
// Search

interface ConnectBurst {
  requests: number;
  errors: number;
  p50_ms: number;
  max_ms: number;
}

/** Lead-ins of a reworded question (`cycle` in measureSearch): 8 x 8 of them, 64 passes over the questions before a text repeats. */
const LEAD_INS = ['Tell me:', 'Quick question:', 'Remind me,', 'I wonder,', 'Do you recall:', 'Help me out:', 'Out of interest,', 'Be honest:'];
const LEAD_INS_2 = ['', 'please,', 'again,', 'now,', 'briefly,', 'exactly,', 'roughly,', 'honestly,'];

interface SearchBody {
  query: string;
  user_id: string;
  top_k: number;
}

async function measureSearch(server: ServerProcess, client: LoopbackClient, workload: Workload, plan: Plan) {
  // Users of about 700 memories: LoCoMo's longest conversations (663-689 turns), replayed as the platform does.
  const chosen = [...workload.conversations].sort((a, b) => b.turns.length - a.turns.length).slice(0, plan.searchUsers);
  const users = chosen.map((conversation) => ({ conversation, userId: `bench-search-${conversation.id}` }));
  // Setup, not a figure: whole sessions per Add (up to 47 messages), fewer encoder calls than the platform's 20.
  const ingestBodies = interleave(users.map(({ conversation, userId }) => sessionAdds(conversation, userId, 64)));
  progress(`Search: ingesting ${users.length} users (${ingestBodies.reduce((sum, body) => sum + body.messages.length, 0)} messages)`);
  let next = 0;
  const ingest = await runLoad({ client, path: '/add', concurrency: 8, nextBody: () => ingestBodies[next++], check: checkAdd, timeoutMs: 300_000 });
  const memories = await userCounts(client, users.map((user) => user.userId));

  // Every user is asked every conversation's questions (another conversation's names are plausible queries
  // too): more distinct queries than the phases send, so a server-side query cache would not flatter them.
  const allQuestions = workload.conversations.flatMap(questionsOf);
  const queries = allQuestions.map((query, i): SearchBody => ({ query, user_id: users[i % users.length].userId, top_k: TOP_K }));
  let cursor = 0;
  // Past the first pass every question comes back reworded (a lead-in, as agents rephrase): the
  // server keeps the vectors of 2,048 recent queries, and a repeated text would skip the encoder,
  // flattering every CPU figure of the phase (a quick run sends ~5,000 Searches, a full one more).
  const cycle = (): SearchBody => {
    const index = cursor++;
    const body = queries[index % queries.length];
    const pass = Math.floor(index / queries.length);
    if (pass === 0) return body;
    const leadIn = `${LEAD_INS[(pass - 1) % LEAD_INS.length]} ${LEAD_INS_2[Math.floor((pass - 1) / LEAD_INS.length) % LEAD_INS_2.length]}`.trim();
    return { ...body, query: `${leadIn} ${body.query}` };
  };
  const counted = (count: number) => {
    let sent = 0;
    return () => (sent++ < count ? cycle() : undefined);
  };
  const warmup = await runLoad({ client, path: '/search', concurrency: 1, nextBody: counted(plan.searchWarmup), check: checkSearch, timeoutMs: 60_000 });
  progress(`Search: warm-up ${warmup.ok}/${warmup.requests} ok, p50 ${warmup.latency_ms.p50} ms`);

  let cpu = startCpuWatch(server);
  const sequentialQueries: string[] = [];
  const sequentialBody = counted(plan.searchSequential);
  const sequential = await runLoad({
    client,
    path: '/search',
    concurrency: 1,
    nextBody: () => {
      const body = sequentialBody();
      if (body) sequentialQueries.push(body.query);
      return body;
    },
    check: checkSearch,
    timeoutMs: 60_000,
  });
  const sequentialCpu = cpu();
  progress(`Search: 1 client ${sequential.per_s} req/s, p50 ${sequential.latency_ms.p50} ms, p95 ${sequential.latency_ms.p95} ms (${cpuText(sequentialCpu)})`);

  const concurrent = await measureConcurrentSearch(server, client, counted, cycle, serverEncoderThreads(), plan.searchSeconds);
  return {
    top_k: TOP_K,
    users: users.map(({ userId }, i) => ({ user_id: userId, memories: memories[i] })),
    questions: queries.length,
    ingest_errors: ingest.errors,
    ingest_messages_per_s: round((ingestBodies.reduce((sum, body) => sum + body.messages.length, 0) * (ingest.ok / Math.max(ingest.requests, 1))) / ingest.elapsed_s, 1),
    warmup: { requests: warmup.requests, errors: warmup.errors },
    sequential: { ...sequential, cpu: sequentialCpu, server_cpu_ms_per_request: cpuMsPer(sequentialCpu, sequential.elapsed_s, sequential.ok) },
    /** The queries of the sequential phase, in order: the encoding-alone figure encodes the same ones. */
    sequential_queries: sequentialQueries,
    concurrent,
    /** The phase's query stream, where it left off (reworded past the first pass): for more Search phases on the same users. */
    next: cycle,
    counted,
  };
}

type ConcurrentSearch = LoadResult & { cpu: CpuShare; server_cpu_ms_per_request: number; server_cpu_ms_per_request_by_thread: ReturnType<typeof threadCpuMsPer>; connect_burst: ConnectBurst };

/** Search at each of SEARCH_CLIENTS concurrent clients, with the server's CPU by thread. */
async function measureConcurrentSearch(server: ServerProcess, client: LoopbackClient, counted: (count: number) => () => SearchBody | undefined, cycle: () => SearchBody, encoderThreads: number, seconds: number, label = 'Search'): Promise<ConcurrentSearch[]> {
  const concurrent: ConcurrentSearch[] = [];
  for (const clients of SEARCH_CLIENTS) {
    // One request per client first, not counted: it opens the connections. While the encoder holds
    // the event loop, a burst of new connections waits seconds to be accepted (kept as a figure).
    const opening = await runLoad({ client, path: '/search', concurrency: clients, nextBody: counted(clients), check: checkSearch, timeoutMs: 60_000 });
    const connectBurst = { requests: opening.requests, errors: opening.errors, p50_ms: opening.latency_ms.p50, max_ms: opening.latency_ms.max };
    const cpu = startCpuWatch(server);
    const threadsBefore = threadCpuSeconds(server.pids());
    const result = await runLoad({ client, path: '/search', concurrency: clients, nextBody: cycle, check: checkSearch, durationMs: seconds * 1000, timeoutMs: 60_000 });
    const share = cpu();
    const byThread = threadCpuMsPer(threadsBefore, threadCpuSeconds(server.pids()), result.ok, encoderThreads);
    concurrent.push({ ...result, cpu: share, server_cpu_ms_per_request: cpuMsPer(share, result.elapsed_s, result.ok), server_cpu_ms_per_request_by_thread: byThread, connect_burst: connectBurst });
    progress(`${label}: ${clients} clients ${result.per_s} req/s, p50 ${result.latency_ms.p50} ms, p99 ${result.latency_ms.p99} ms, errors ${result.errors}; opening ${clients} connections took up to ${connectBurst.max_ms} ms (${cpuText(share)}; server CPU ms a request by thread ${JSON.stringify(byThread)})`);
  }
  return concurrent;
}

/**
 * The same concurrent Searches on the same users, served by one server process per core
 * (MEMORYPOOL_PROCESSES, README "Every core") on the same data directory: what the main thread's
 * limit costs, in this run. Skipped on one core, or when the whole bench already runs several.
 */
async function measureSearchProcesses(dataDir: string, nodeArgs: string[], plan: Plan, search: { next: () => SearchBody; counted: (count: number) => () => SearchBody | undefined }) {
  const processes = os.availableParallelism();
  if (processes < 2 || benchProcesses() > 1) return null;
  const server = await ServerProcess.start({ dataDir, nodeArgs, env: { MEMORYPOOL_PROCESSES: String(processes) } });
  const client = new LoopbackClient(server.url, 256);
  try {
    const startMs = await waitForFirstAnswer(server, client, () => ({ query: 'warm-up', user_id: 'nobody', top_k: 1 }), 120_000, () => true);
    // Every process loads the users on its first request for them: warm them all up first, not counted.
    await runLoad({ client, path: '/search', concurrency: 32, nextBody: search.counted(256), check: checkSearch, timeoutMs: 60_000 });
    const concurrent = await measureConcurrentSearch(server, client, search.counted, search.next, serverEncoderThreads(processes), plan.searchSeconds, `Search, ${processes} server processes`);
    const memory = server.memory();
    return { processes, start_ms: startMs, concurrent, rss_mb: memory.rss_mb };
  } finally {
    client.close();
    await server.stop();
  }
}

/**
 * The single-client Search's floor: the same queries encoded one at a time by the server's
 * encoder in the bench's process (no HTTP, no scoring, no thread hop), while the server idles.
 * Back to back, the model's weights stay in the core's caches; `paced` encodes the same queries
 * with a pause between them, as a server that does other work between two queries does (a
 * sequential Search leaves its encoder idle ~3 ms while the rest of the request runs).
 */
async function measureEncodeAlone(embedder: OnnxEmbedder, queries: readonly string[]) {
  await embedder.embed(queries.slice(0, 10));
  const latencies: number[] = [];
  const cpu = startCpuWatch(null);
  const cpuAtStart = process.cpuUsage();
  for (const query of queries) {
    const started = performance.now();
    await embedder.embed([query]);
    latencies.push(performance.now() - started);
  }
  const cpuUsed = process.cpuUsage(cpuAtStart);
  const share = cpu();
  const paced: number[] = [];
  for (const query of queries) {
    await new Promise((resolve) => setTimeout(resolve, ENCODE_PACE_MS));
    const started = performance.now();
    await embedder.embed([query]);
    paced.push(performance.now() - started);
  }
  const cpuMsPerQuery = round((cpuUsed.user + cpuUsed.system) / 1000 / Math.max(queries.length, 1), 3);
  const result = { queries: queries.length, latency_ms: latencyStats(latencies), cpu_ms_per_query: cpuMsPerQuery, cpu: share, paced: { pause_ms: ENCODE_PACE_MS, latency_ms: latencyStats(paced) } };
  progress(
    `encoding alone: ${queries.length} queries one at a time, p50 ${result.latency_ms.p50} ms, p95 ${result.latency_ms.p95} ms, CPU ${cpuMsPerQuery} ms a query (${cpuText(share)}); ` +
      `with ${ENCODE_PACE_MS} ms between them, p50 ${result.paced.latency_ms.p50} ms`,
  );
  return result;
}

function questionsOf(conversation: Conversation): string[] {
  if (conversation.questions.length > 0) return conversation.questions;
  return conversation.turns.slice(0, 50).map((turn) => `What did ${turn.speaker} say about ${turn.content.split(/\s+/).slice(2, 6).join(' ')}?`);
}

/** Memories the service holds per user (GET /mem/stats), or null if that route cannot tell. */
async function userCounts(client: LoopbackClient, userIds: readonly string[]): Promise<Array<number | null>> {
  try {
    const answer = await client.get('/mem/stats', 30_000);
    const stats = JSON.parse(answer.text) as { per_user?: Array<{ user_id: string; count: number }> };
    return userIds.map((userId) => stats.per_user?.find((entry) => entry.user_id === userId)?.count ?? null);
  } catch {
    return userIds.map(() => null);
  }
}

// ---------------------------------------------------------------------------------------------
// Scale

async function measureScale(workDir: string, workload: Workload, memories: number, plan: Plan, nodeArgs: string[]) {
  const dataDir = path.join(workDir, `scale-${memories}`);
  progress(`Scale ${memories}: writing the store (${SCALE_USERS} users) and its index caches`);
  const texts = workload.conversations.flatMap((conversation) => conversation.turns);
  const store = await writeScaleStore({ dataDir, memories, users: SCALE_USERS, texts, seed: memories });
  const diskBytes = await directoryBytes(dataDir);
  progress(`Scale ${memories}: store written in ${store.total_s} s (${store.records_s} s of it records), ${(diskBytes / MB).toFixed(0)} MiB`);
  const questions = workload.conversations.flatMap(questionsOf);
  let q = 0;
  const searchBody = (): SearchBody => ({ query: questions[q++ % questions.length], user_id: store.users[q % store.users.length], top_k: TOP_K });

  const runs = [];
  let searchErrors = 0;
  for (let run = 0; run < plan.coldStartRuns; run++) {
    const result = await coldStart(dataDir, searchBody, 120_000, nodeArgs, store.users, false);
    searchErrors += result.search_errors;
    runs.push(result);
    progress(`Scale ${memories}: cold start ${result.cold_start_ms} ms (server CPU ${result.cold_start_server_cpu_s} s), RSS ${result.rss_mb} MiB (peak ${result.peak_rss_mb}), index cache used: ${result.index_cache_used} (${cpuText(result.cpu)})`);
  }
  if (runs.some((entry) => entry.index_cache_used === false)) {
    warn(`scale ${memories}: the server rebuilt the HNSW indexes instead of reading the caches the bench wrote, so cold start includes a rebuild: bench/scale-store.ts no longer matches the cache format of src/memory/memory-service.ts`);
  }
  const rebuild = [];
  if (plan.rebuildSizes.includes(memories)) {
    await removeIndexCaches(dataDir, store.users);
    progress(`Scale ${memories}: start without index caches (rebuilt from the JSONL)`);
    const result = await coldStart(dataDir, searchBody, plan.rebuildTimeoutMs, nodeArgs, store.users, true);
    searchErrors += result.search_errors;
    rebuild.push(result);
    progress(`Scale ${memories}: without index caches, first answer after ${result.cold_start_ms} ms, indexes complete after ${result.indexes_complete_ms ?? '?'} ms, RSS ${result.rss_mb} MiB`);
  }
  const best = [...runs].sort((a, b) => a.cold_start_ms - b.cold_start_ms)[0];
  return {
    memories,
    users: store.users.length,
    store_generation_s: store.total_s,
    bytes_on_disk: diskBytes,
    bytes_on_disk_per_memory: Math.round(diskBytes / memories),
    cold_start_ms: best.cold_start_ms,
    rss_mb: best.rss_mb,
    rss_bytes: best.rss_bytes,
    rss_bytes_per_memory: Math.round(best.rss_bytes / memories),
    peak_rss_mb: Math.max(...runs.map((entry) => entry.peak_rss_mb)),
    search_errors: searchErrors,
    runs,
    start_without_index_cache: rebuild[0] ?? null,
  };
}

/**
 * Spawn → first Search answered; then resident memory after a few more Searches, and a clean stop.
 * With `awaitIndexes`, also waits until /mem/stats says every user's index is complete (a server
 * may answer while it still rebuilds them; a user within the exhaustive limit keeps none).
 */
async function coldStart(dataDir: string, body: () => SearchBody, timeoutMs: number, nodeArgs: string[], users: readonly string[], awaitIndexes: boolean) {
  const server = await ServerProcess.start({ dataDir, nodeArgs });
  const watch = startCpuWatch(server);
  const client = new LoopbackClient(server.url, 8);
  try {
    const coldStartMs = await waitForFirstAnswer(server, client, body, timeoutMs, (answer) => checkSearch(answer) === null);
    const share = watch();
    const first = server.memory();
    const indexesCompleteMs = awaitIndexes ? await waitForIndexes(server, client, users, timeoutMs) : null;
    let next = 0;
    const searches = await runLoad({ client, path: '/search', concurrency: 1, nextBody: () => (next++ < 10 ? body() : undefined), check: checkSearch, timeoutMs: 60_000 });
    const steady = server.memory();
    const pending = await pendingIndexFlushes(client, users);
    const stop = await server.stop();
    return {
      cold_start_ms: coldStartMs,
      /** CPU the server spent getting there (all threads): steadier than the wall time on a busy machine. */
      cold_start_server_cpu_s: round((share.server_cores * coldStartMs) / 1000, 2),
      cpu: share,
      /** Spawn → every user's HNSW index complete (only measured when starting without caches). */
      indexes_complete_ms: indexesCompleteMs,
      rss_mb_at_first_answer: first.rss_mb,
      rss_mb: steady.rss_mb,
      rss_bytes: steady.rss_bytes,
      peak_rss_mb: steady.peak_rss_mb,
      search_p50_ms: searches.latency_ms.p50,
      search_errors: searches.errors,
      /** False when the server found no usable cache and rebuilt the HNSW indexes (they are then due to be written). */
      index_cache_used: pending === null ? null : !pending,
      stop_ms: stop.stop_ms,
      exit: stop.code ?? stop.signal,
      server_log: server.logLines.slice(0, 10),
    };
  } finally {
    client.close();
    if (server.running) await server.stop();
  }
}

/** Polls GET /mem/stats until every user's index is complete; ms since spawn, or null if the route cannot tell. */
async function waitForIndexes(server: ServerProcess, client: LoopbackClient, users: readonly string[], timeoutMs: number): Promise<number | null> {
  while (performance.now() < server.spawnedAt + timeoutMs) {
    try {
      const stats = JSON.parse((await client.get('/mem/stats', 60_000)).text) as { per_user?: Array<{ user_id: string; index?: { complete?: unknown } }> };
      const complete = users.map((userId) => stats.per_user?.find((entry) => entry.user_id === userId)?.index?.complete);
      if (!complete.every((flag) => typeof flag === 'boolean')) return null;
      if (complete.every(Boolean)) return Math.round(performance.now() - server.spawnedAt);
    } catch {
      return null;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  warn(`indexes not complete within ${timeoutMs} ms`);
  return null;
}

async function pendingIndexFlushes(client: LoopbackClient, users: readonly string[]): Promise<boolean | null> {
  try {
    const stats = JSON.parse((await client.get('/mem/stats', 60_000)).text) as { per_user?: Array<{ user_id: string; index?: { pending_flush?: unknown } }> };
    const flags = users.map((userId) => stats.per_user?.find((entry) => entry.user_id === userId)?.index?.pending_flush);
    return flags.every((flag) => typeof flag === 'boolean') ? flags.some(Boolean) : null;
  } catch {
    return null;
  }
}

/**
 * Polls until the server answers a request `accept`s, counting from spawn. Refused connections
 * are the server still loading; an exit ends the wait with its log.
 */
// ---------------------------------------------------------------------------------------------

async function removeScratch(): Promise<void> {
  if (scratchDir !== null) await rm(scratchDir, { recursive: true, force: true });
  scratchDir = null;
}

function target(id: string, wanted: string, value: number, unit: string, pass: boolean, note?: string) {
  return { id, target: wanted, value: value as number | null, unit, result: pass ? 'pass' : 'miss', ...(note === undefined ? {} : { note }) };
}

/** Round-robin over lists, so consecutive requests go to different users. */
function interleave<T>(lists: readonly T[][]): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...lists.map((list) => list.length));
  for (let i = 0; i < longest; i++) for (const list of lists) if (i < list.length) out.push(list[i]);
  return out;
}

async function directoryBytes(dir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}

function git(args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: PACKAGE_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  } catch {
    return 'unknown';
  }
}

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    progress(`${signal}: stopping the servers`);
    void ServerProcess.stopAll(5_000)
      .then(removeScratch)
      .finally(() => process.exit(130));
  });
}

main().catch((error: Error) => {
  process.stderr.write(`bench failed: ${error.stack ?? error.message}\n`);
  process.exit(1);
});
