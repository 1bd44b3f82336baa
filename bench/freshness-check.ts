/**
 * What sharing a data directory between processes costs the JSONL store (`freshness_check` and
 * `append_lock` in bench.json).
 *
 * The freshness check (`freshness_check`).
 *
 * Every request first asks the store for the user's version (`UserCache.fresh`): with several
 * processes on one data directory, that is a stat of the user's memories file compared with what
 * the store last saw (bench/README.md). Measured in the bench's own process on the server's data
 * directory, right after the sequential Search phase: a store opened there, each user's head read
 * once, then `version()` called back to back for the users in turn, with nothing changed (the
 * cached case, the one every Search of a cached user pays). Quoted against the sequential cached
 * Search of the same run, so the ratio holds on a shared machine.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { silentLogger } from '../src/logger.js';
import { JsonlMemoryStore } from '../src/store/jsonl-memory-store.js';
import { JsonlStore } from '../src/store/jsonl-store.js';
import type { StoredRecord } from '../src/store/stored-record.js';
import { checkSearch, LoopbackClient, round, runLoad } from './http-load.js';
import { serveLongestConversation } from './longest-user-server.js';
import { ServerProcess } from './server-process.js';
import { DEFAULT_LOCOMO, loadWorkload } from './workload.js';

export interface FreshnessCheck {
  calls: number;
  /** Mean wall time of one check (µs), and the nearest-rank p50 of batches of 100. */
  mean_us: number;
  p50_us: number;
  search_p50_ms: number;
  /** mean_us over the sequential Search p50: the share of a cached Search the check costs. */
  ratio_to_cached_search: number;
}

export async function measureFreshnessCheck(dataDir: string, userIds: readonly string[], searchP50Ms: number, calls: number): Promise<FreshnessCheck> {
  const store = new JsonlMemoryStore(dataDir, silentLogger());
  await store.init();
  try {
    for (const userId of userIds) await store.load(userId);
    const batches: number[] = [];
    const started = performance.now();
    for (let done = 0; done < calls; done += 100) {
      const batchStarted = performance.now();
      for (let i = 0; i < 100; i++) await store.version(userIds[(done + i) % userIds.length]);
      batches.push(((performance.now() - batchStarted) * 1000) / 100);
    }
    const meanUs = ((performance.now() - started) * 1000) / (batches.length * 100);
    const sorted = [...batches].sort((a, b) => a - b);
    return {
      calls: batches.length * 100,
      mean_us: round(meanUs, 1),
      p50_us: round(sorted[Math.ceil(sorted.length / 2) - 1], 1),
      search_p50_ms: searchP50Ms,
      ratio_to_cached_search: round(meanUs / (searchP50Ms * 1000), 4),
    };
  } finally {
    await store.close();
  }
}

export interface AppendLock {
  appends: number;
  /** Median wall time of one single-memory append (ms): the file layer alone (open, write, fsync), and the store's (the user's lock, a catch-up stat, the same append). */
  file_only_p50_ms: number;
  with_lock_p50_ms: number;
  lock_overhead_p50_ms: number;
}

/**
 * The store's Add takes the user's lock around its append (lock file created with link(), a stat
 * to catch up on the file, then unlinked). Timed against the bare append of the same record, the
 * two alternating, into two users of a scratch directory. Both fsync, which dominates.
 */
export async function measureAppendLock(dataDir: string, appends: number): Promise<AppendLock> {
  const store = new JsonlMemoryStore(dataDir, silentLogger());
  const files = new JsonlStore(dataDir, silentLogger());
  await store.init();
  const vector = new Float32Array(512).fill(0.01);
  const memory = (userId: string, i: number) => ({ id: `${userId}-${i}`, user_id: userId, text: `memory ${i}`, tags: [], importance: 0.5, source: 'bench', created_at: new Date().toISOString(), model: 'bench' });
  const fileOnly: number[] = [];
  const withLock: number[] = [];
  try {
    for (let i = 0; i < appends; i++) {
      let started = performance.now();
      await files.append('bench-file-only', [{ ...memory('bench-file-only', i), seq: i, vec: Buffer.from(vector.buffer).toString('base64') } as StoredRecord]);
      fileOnly.push(performance.now() - started);
      started = performance.now();
      await store.append('bench-locked', [{ record: memory('bench-locked', i), vector }]);
      withLock.push(performance.now() - started);
    }
  } finally {
    await store.close();
  }
  const p50 = (values: number[]) => [...values].sort((a, b) => a - b)[Math.ceil(values.length / 2) - 1];
  return {
    appends,
    file_only_p50_ms: round(p50(fileOnly), 3),
    with_lock_p50_ms: round(p50(withLock), 3),
    lock_overhead_p50_ms: round(p50(withLock) - p50(fileOnly), 3),
  };
}

// ---------------------------------------------------------------------------------------------
// On its own (`node dist/bench/freshness-check.js`, about a minute): a server, the longest LoCoMo
// conversation as the searched user, 300 sequential Searches (after 50 of warm-up), then both
// figures above, in one run so that their ratio holds on a shared machine.

async function main(): Promise<void> {
  const started = performance.now();
  const log = (line: string) => process.stderr.write(`[freshness ${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);
  const workload = await loadWorkload(process.env.MEMORYPOOL_BENCH_LOCOMO ?? DEFAULT_LOCOMO);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-freshness-'));
  const loadAtStart = os.loadavg()[0];
  try {
    const dataDir = path.join(workDir, 'service');
    const { server, userId, conversation } = await serveLongestConversation(dataDir, workload, 'bench-freshness', log);
    const client = new LoopbackClient(server.url, 8);
    const questions = workload.conversations.flatMap((entry) => entry.questions);
    const searches = (count: number) => {
      let sent = 0;
      return () => (sent < count ? { query: questions[sent++ % questions.length], user_id: userId, top_k: 100 } : undefined);
    };
    await runLoad({ client, path: '/search', concurrency: 1, nextBody: searches(50), check: checkSearch, timeoutMs: 60_000 });
    const sequential = await runLoad({ client, path: '/search', concurrency: 1, nextBody: searches(300), check: checkSearch, timeoutMs: 60_000 });
    log(`Search: 1 client p50 ${sequential.latency_ms.p50} ms, errors ${sequential.errors}`);
    const freshness = await measureFreshnessCheck(dataDir, [userId], sequential.latency_ms.p50, 5_000);
    log(`freshness check: ${freshness.mean_us} µs (${round(freshness.ratio_to_cached_search * 100, 2)}% of a cached Search)`);
    const appendLock = await measureAppendLock(path.join(workDir, 'append-lock'), 200);
    log(`append: p50 ${appendLock.file_only_p50_ms} ms alone, ${appendLock.with_lock_p50_ms} ms with the lock`);
    client.close();
    await server.stop();
    process.stdout.write(
      JSON.stringify(
        {
          bench: 'memorypool-freshness-check',
          command: 'node dist/bench/freshness-check.js',
          cpu_model: os.cpus()[0]?.model ?? 'unknown',
          load_avg: { at_start: round(loadAtStart, 2), at_end: round(os.loadavg()[0], 2) },
          memories: conversation.turns.length,
          search_errors: sequential.errors,
          freshness_check: freshness,
          append_lock: appendLock,
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    await ServerProcess.stopAll();
    await rm(workDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: Error) => {
    process.stderr.write(`freshness-check: ${error.stack ?? error.message}\n`);
    process.exitCode = 1;
  });
}
