/**
 * Growth with one user's size (issue 20, item 3): one user of 10k, 100k and (full runs) 1M
 * memories, each in a data directory of its own written by `growth-store.ts`, served by the real
 * server. Per size: the user's cold load, Search latency with 1 and 32 clients, Add messages/s
 * into that user, resident memory; then the growth table and two targets, ratios of one run.
 *
 * Also runs on its own: `node dist/bench/growth.js [--quick] [--sizes 10000,100000] [--out <dir>] [--profile]
 * [--stores <dir> [--write-only]]` (`--stores` keeps the stores there for the next run).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { cpuMsPer, cpuText } from './cpu-figures.js';
import { writeGrowthStore, userFileBytes } from './growth-store.js';
import { checkAdd, checkSearch, LoopbackClient, round, runLoad } from './http-load.js';
import { ServerProcess, startCpuWatch, waitForFirstAnswer } from './server-process.js';
import { DEFAULT_LOCOMO, loadWorkload, type AddBody, type Workload } from './workload.js';

export const GROWTH_SIZES = { quick: [10_000, 100_000], full: [10_000, 100_000, 1_000_000] } as const;
/** Target: Search p50 at the largest size ≤ this × the p50 at 10k (1 client). */
const SEARCH_P50_GROWTH_LIMIT = 3;
/** Target: resident bytes per extra memory, marginal from the smallest size to the largest (2.5 KiB). */
const RSS_PER_MEMORY_LIMIT = 2.5 * 1024;
const TOP_K = 100;
const USER_ID = 'growth-user';
const MB = 1024 * 1024;
const RUN = Date.now().toString(36);
/** After the last Add, when the server's flush of the user's graph is under way (its flush delay is 2 s: memory-service.ts). */
const FLUSH_STARTED_MS = 2_500;

export interface GrowthPlan {
  sequentialSearches: number;
  concurrentSeconds: number;
  adds: number;
  addClients: number;
  /** Spawn → first answer, and how long the whole start may take (a million memories load for a while). */
  startTimeoutMs: number;
}

export const GROWTH_PLANS: Record<'quick' | 'full', GrowthPlan> = {
  quick: { sequentialSearches: 150, concurrentSeconds: 5, adds: 24, addClients: 4, startTimeoutMs: 600_000 },
  full: { sequentialSearches: 400, concurrentSeconds: 10, adds: 64, addClients: 4, startTimeoutMs: 1_800_000 },
};

export interface GrowthOptions {
  workDir: string;
  /** Where the stores are kept between runs (written when missing, never removed); default: written in `workDir`, removed once measured. */
  storesDir?: string;
  /** Only write the stores (into `storesDir`). */
  writeOnly?: boolean;
  workload: Workload;
  sizes: readonly number[];
  plan: GrowthPlan;
  nodeArgs: string[];
  progress: (message: string) => void;
  warn: (message: string) => void;
}

type Log = (message: string) => void;

/** The phase: every size in turn, each store removed once measured (a million memories take ~10 GB on disk). */
export async function measureGrowth(options: GrowthOptions) {
  const { workload, progress } = options;
  const texts = workload.conversations.flatMap((conversation) => conversation.turns);
  const questions = workload.conversations.flatMap((conversation) => conversation.questions);
  if (questions.length === 0) for (const turn of texts.slice(0, 200)) questions.push(`What did ${turn.speaker} say about ${turn.content.split(/\s+/).slice(2, 6).join(' ')}?`);
  const sizes = [];
  for (const memories of options.sizes) {
    const dataDir = path.join(options.storesDir ?? options.workDir, `growth-${memories}`);
    const marker = `${dataDir}.written`;
    let generationS: number | null = null;
    if (options.storesDir === undefined || !existsSync(marker)) {
      await rm(dataDir, { recursive: true, force: true });
      progress(`Growth ${memories}: writing one user of ${memories} memories and its index cache`);
      const store = await writeGrowthStore({ dataDir, userId: USER_ID, memories, texts, seed: 20 + memories });
      generationS = store.total_s;
      progress(`Growth ${memories}: written in ${store.total_s} s (${store.records_s} s of it records)`);
      if (options.storesDir !== undefined) await writeFile(marker, `${JSON.stringify(store)}\n`);
    }
    const diskBytes = await userFileBytes(dataDir);
    progress(`Growth ${memories}: ${(diskBytes / MB).toFixed(0)} MiB on disk`);
    if (options.writeOnly) continue;
    sizes.push({ ...(await measureSize(dataDir, memories, questions, workload, options, progress)), store_generation_s: generationS, bytes_on_disk: diskBytes });
    if (options.storesDir === undefined) await rm(dataDir, { recursive: true, force: true });
  }
  if (options.writeOnly) return null;
  return summarize(sizes);
}

async function measureSize(dataDir: string, memories: number, questions: readonly string[], workload: Workload, options: GrowthOptions, progress: Log) {
  const { plan, nodeArgs } = options;
  let q = 0;
  const searchBody = () => ({ query: questions[q++ % questions.length], user_id: USER_ID, top_k: TOP_K });
  // First start: the JSONL alone (the server writes the vector sidecar after its first load, as in use).
  const first = await startAndFirstAnswer(dataDir, nodeArgs, searchBody, plan.startTimeoutMs, progress, `Growth ${memories}: first start (no sidecar)`);
  await first.server.stop(600_000);
  first.client.close();
  // The start measured: the files as a server that has run leaves them.
  const { server, client, coldStartMs, coldCpuS, rssAtFirst } = await startAndFirstAnswer(dataDir, nodeArgs, searchBody, plan.startTimeoutMs, progress, `Growth ${memories}: cold start`);
  try {
    const warm = await runLoad({ client, path: '/search', concurrency: 1, nextBody: counted(20, searchBody), check: checkSearch, timeoutMs: 120_000 });
    let cpu = startCpuWatch(server);
    const sequential = await runLoad({ client, path: '/search', concurrency: 1, nextBody: counted(plan.sequentialSearches, searchBody), check: checkSearch, timeoutMs: 120_000 });
    const sequentialCpu = cpu();
    progress(`Growth ${memories}: Search 1 client p50 ${sequential.latency_ms.p50} ms, p99 ${sequential.latency_ms.p99} ms (${cpuText(sequentialCpu)})`);
    await runLoad({ client, path: '/search', concurrency: 32, nextBody: counted(32, searchBody), check: checkSearch, timeoutMs: 120_000 });
    cpu = startCpuWatch(server);
    const concurrent = await runLoad({ client, path: '/search', concurrency: 32, nextBody: searchBody, check: checkSearch, durationMs: plan.concurrentSeconds * 1000, timeoutMs: 120_000 });
    const concurrentCpu = cpu();
    progress(`Growth ${memories}: Search 32 clients ${concurrent.per_s} req/s, p50 ${concurrent.latency_ms.p50} ms, p99 ${concurrent.latency_ms.p99} ms (${cpuText(concurrentCpu)})`);
    const resident = server.memory();
    const indexCacheUsed = await indexCacheRead(client);
    if (indexCacheUsed === false) options.warn(`growth ${memories}: the server rebuilt the user's HNSW index instead of reading the cache growth-store.ts wrote (its cache format no longer matches the server's)`);

    const addBodies = growthAdds(workload, plan.adds * 2, memories);
    const addBurst = async (bodies: readonly AddBody[], label: string) => {
      let next = 0;
      const watch = startCpuWatch(server);
      const load = await runLoad({ client, path: '/add', concurrency: plan.addClients, nextBody: () => bodies[next++], check: checkAdd, timeoutMs: 300_000 });
      const loadCpu = watch();
      const messages = load.ok * 20;
      const perS = round(messages / load.elapsed_s, 1);
      progress(`Growth ${memories}: ${label} ${perS} messages/s into the user (${load.ok}/${load.requests} Adds of 20, ${plan.addClients} clients), p50 ${load.latency_ms.p50} ms, p95 ${load.latency_ms.p95} ms (${cpuText(loadCpu)})`);
      return { load, figures: { adds: load.ok, clients: plan.addClients, messages_per_s: perS, ...latencies(load), server_cpu_ms_per_message: cpuMsPer(loadCpu, load.elapsed_s, messages), cpu: loadCpu } };
    };
    const add = await addBurst(addBodies.slice(0, plan.adds), 'Add');
    const addsEnded = performance.now();
    // Right after the Adds: their units wait for the graph and are scored besides its candidates.
    const afterAdd = await runLoad({ client, path: '/search', concurrency: 1, nextBody: counted(50, searchBody), check: checkSearch, timeoutMs: 120_000 });
    const afterAddRss = server.memory();
    // A pause in the writes lets the server flush the user's graph (it starts 2 s after the last
    // write; seconds of writing for a large user): Adds arriving then show what a write waits for.
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, addsEnded + FLUSH_STARTED_MS - performance.now())));
    const duringFlush = await addBurst(addBodies.slice(plan.adds), 'Add during the graph flush');
    const stop = await server.stop(600_000);
    const errors = warm.errors + sequential.errors + concurrent.errors + add.load.errors + afterAdd.errors + duringFlush.load.errors;
    return {
      memories,
      first_start: { cold_start_ms: first.coldStartMs, server_cpu_s: first.coldCpuS },
      cold_start_ms: coldStartMs,
      cold_start_server_cpu_s: coldCpuS,
      rss_mb_at_first_answer: rssAtFirst.rss_mb,
      /** False when the server found no usable graph cache and rebuilt it (then due to be written). */
      index_cache_used: indexCacheUsed,
      rss_mb: resident.rss_mb,
      rss_bytes: resident.rss_bytes,
      peak_rss_mb: resident.peak_rss_mb,
      search_1_client: { ...latencies(sequential), per_s: sequential.per_s, server_cpu_ms_per_request: cpuMsPer(sequentialCpu, sequential.elapsed_s, sequential.ok), cpu: sequentialCpu },
      search_32_clients: { ...latencies(concurrent), per_s: concurrent.per_s, server_cpu_ms_per_request: cpuMsPer(concurrentCpu, concurrent.elapsed_s, concurrent.ok), cpu: concurrentCpu },
      add: add.figures,
      search_after_add: latencies(afterAdd),
      rss_mb_after_add: afterAddRss.rss_mb,
      add_during_flush: duringFlush.figures,
      errors,
      error_samples: [warm, sequential, concurrent, add.load, afterAdd, duringFlush.load].flatMap((load) => load.error_samples).slice(0, 5),
      stop_ms: stop.stop_ms,
      exit: stop.code ?? stop.signal,
      server_log: server.logLines.slice(0, 10),
    };
  } finally {
    client.close();
    if (server.running) await server.stop();
  }
}

async function startAndFirstAnswer(dataDir: string, nodeArgs: string[], body: () => object, timeoutMs: number, progress: Log, label: string) {
  const server = await ServerProcess.start({ dataDir, nodeArgs });
  const watch = startCpuWatch(server);
  const client = new LoopbackClient(server.url, 32);
  const coldStartMs = await waitForFirstAnswer(server, client, body, timeoutMs, (answer) => checkSearch(answer) === null);
  const share = watch();
  const coldCpuS = round((share.server_cores * coldStartMs) / 1000, 2);
  const rssAtFirst = server.memory();
  progress(`${label}: first Search answered after ${coldStartMs} ms (server CPU ${coldCpuS} s), RSS ${rssAtFirst.rss_mb} MiB`);
  return { server, client, coldStartMs, coldCpuS, rssAtFirst };
}

/** Whether the server read the user's HNSW cache (no index flush pending before any write); null if /mem/stats cannot tell. */
async function indexCacheRead(client: LoopbackClient): Promise<boolean | null> {
  try {
    const stats = JSON.parse((await client.get('/mem/stats', 120_000)).text) as { per_user?: Array<{ user_id: string; index?: { pending_flush?: unknown } }> };
    const pending = stats.per_user?.find((entry) => entry.user_id === USER_ID)?.index?.pending_flush;
    return typeof pending === 'boolean' ? !pending : null;
  } catch {
    return null;
  }
}

/** Adds of 20 consecutive LoCoMo turns into the one user, in sessions of their own after the stored ones. */
function growthAdds(workload: Workload, count: number, memories: number): AddBody[] {
  const turns = workload.conversations.flatMap((conversation) => conversation.turns);
  const base = Date.UTC(2030, 0, 1);
  return Array.from({ length: count }, (_, n) => ({
    // A run of its own: a kept store has the earlier runs' Adds (a repeated request id stores nothing).
    request_id: `growth-add-${memories}-${RUN}-${n}`,
    user_id: USER_ID,
    session_id: `growth-session-${Math.floor(n / 2)}`,
    messages: Array.from({ length: 20 }, (_, m) => {
      const turn = turns[(n * 20 + m) % turns.length];
      return { role: turn.speaker, content: turn.content, timestamp: base + n * 60_000 + m * 1000 };
    }),
  }));
}

function counted<T>(count: number, body: () => T): () => T | undefined {
  let sent = 0;
  return () => (sent++ < count ? body() : undefined);
}

function latencies(load: { requests: number; errors: number; latency_ms: { p50: number; p95: number; p99: number } }) {
  return { requests: load.requests, errors: load.errors, p50_ms: load.latency_ms.p50, p95_ms: load.latency_ms.p95, p99_ms: load.latency_ms.p99 };
}

type SizeResult = Awaited<ReturnType<typeof measureSize>> & { store_generation_s: number | null; bytes_on_disk: number };

function summarize(sizes: SizeResult[]) {
  const smallest = sizes[0];
  const largest = sizes[sizes.length - 1];
  const withMarginal = sizes.map((size, i) => ({
    ...size,
    marginal_rss_bytes_per_memory: i === 0 ? null : Math.round((size.rss_bytes - sizes[i - 1].rss_bytes) / (size.memories - sizes[i - 1].memories)),
  }));
  const p50Ratio = round(largest.search_1_client.p50_ms / smallest.search_1_client.p50_ms, 2);
  const perMemory = Math.round((largest.rss_bytes - smallest.rss_bytes) / (largest.memories - smallest.memories));
  const byHow = (value: number, limit: number) => `${value <= limit ? 'under' : 'over'} the limit by ${round(Math.abs(value / limit - 1) * 100, 0)}%`;
  const targets = [
    {
      id: 'growth_search_p50',
      target: `Search p50 (1 client) at ${largest.memories} memories <= ${SEARCH_P50_GROWTH_LIMIT} x the p50 at ${smallest.memories}`,
      value: p50Ratio,
      unit: 'ratio',
      result: p50Ratio <= SEARCH_P50_GROWTH_LIMIT ? 'pass' : 'miss',
      note: `p50 ${largest.search_1_client.p50_ms} ms at ${largest.memories}, ${smallest.search_1_client.p50_ms} ms at ${smallest.memories}; ${byHow(p50Ratio, SEARCH_P50_GROWTH_LIMIT)}`,
    },
    {
      id: 'growth_rss_per_memory',
      target: `RSS per extra memory, ${smallest.memories} -> ${largest.memories} <= ${RSS_PER_MEMORY_LIMIT} bytes (2.5 KiB)`,
      value: perMemory,
      unit: 'bytes',
      result: perMemory <= RSS_PER_MEMORY_LIMIT ? 'pass' : 'miss',
      note: `RSS ${largest.rss_mb} MiB at ${largest.memories}, ${smallest.rss_mb} MiB at ${smallest.memories}; ${byHow(perMemory, RSS_PER_MEMORY_LIMIT)}`,
    },
  ];
  return { user_id: USER_ID, top_k: TOP_K, sizes: withMarginal, search_p50_ratio: p50Ratio, marginal_rss_bytes_per_memory: perMemory, targets, table: growthTable(withMarginal) };
}

/** The growth table, one line per size (also printed by the bench). */
function growthTable(sizes: Array<SizeResult & { marginal_rss_bytes_per_memory: number | null }>): string[] {
  const header = 'memories | cold start ms (CPU s) | Search 1 client p50/p99 ms | 32 clients p50/p99 ms, req/s | Add msg/s (p95 ms) | Add during flush msg/s (p95 ms) | RSS MiB | marginal B/memory';
  return [
    header,
    ...sizes.map((size) =>
      [
        size.memories,
        `${size.cold_start_ms} (${size.cold_start_server_cpu_s})`,
        `${size.search_1_client.p50_ms}/${size.search_1_client.p99_ms}`,
        `${size.search_32_clients.p50_ms}/${size.search_32_clients.p99_ms}, ${size.search_32_clients.per_s}`,
        `${size.add.messages_per_s} (${size.add.p95_ms})`,
        `${size.add_during_flush.messages_per_s} (${size.add_during_flush.p95_ms})`,
        size.rss_mb,
        size.marginal_rss_bytes_per_memory ?? '-',
      ].join(' | '),
    ),
  ];
}

// ---------------------------------------------------------------------------------------------
// On its own

async function standalone(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string' },
      out: { type: 'string' },
      keep: { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
      profile: { type: 'boolean', default: false },
      stores: { type: 'string' },
      'write-only': { type: 'boolean', default: false },
    },
  });
  if (values['write-only'] && values.stores === undefined) throw new Error('--write-only needs --stores <dir>');
  const mode = values.quick ? 'quick' : 'full';
  const sizes = values.sizes ? values.sizes.split(',').map(Number) : [...GROWTH_SIZES[mode]];
  const started = performance.now();
  const progress = (message: string) => process.stderr.write(`[growth ${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${message}\n`);
  const warnings: string[] = [];
  const outDir = path.resolve(values.out ?? path.join(fileURLToPath(new URL('../..', import.meta.url)), '.bench-out'));
  await mkdir(outDir, { recursive: true });
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-growth-'));
  const nodeArgs = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(outDir, 'profiles')}`] : [];
  try {
    const workload = await loadWorkload(DEFAULT_LOCOMO);
    const storesDir = values.stores === undefined ? undefined : path.resolve(values.stores);
    if (storesDir) await mkdir(storesDir, { recursive: true });
    const result = await measureGrowth({ workDir, storesDir, writeOnly: values['write-only'], workload, sizes, plan: GROWTH_PLANS[mode], nodeArgs, progress, warn: (message) => warnings.push(message) });
    if (result === null) return;
    const summary = { bench: 'memorypool-growth', requested_sizes: sizes, cpu_model: os.cpus()[0]?.model, load_avg_at_end: os.loadavg(), warnings, ...result };
    await writeFile(path.join(outDir, 'bench-growth.json'), JSON.stringify(summary, null, 2) + '\n');
    process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
    for (const line of result.table) progress(line);
    for (const row of result.targets) progress(`${row.result.padEnd(6)} ${row.id}: ${row.value} ${row.unit} (${row.target}; ${row.note})`);
  } finally {
    await ServerProcess.stopAll();
    if (values.keep) progress(`kept ${workDir}`);
    else await rm(workDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void ServerProcess.stopAll(5_000).finally(() => process.exit(130)));
  standalone().catch((error: Error) => {
    process.stderr.write(`growth bench failed: ${error.stack ?? error.message}\n`);
    process.exit(1);
  });
}
