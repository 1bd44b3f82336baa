/**
 * What cached users really cost against the cache's own estimate: N users of M memories (LoCoMo
 * texts, random 512-dimensional vectors, the server's model id) written into a temporary JSONL
 * data directory, then touched once each, in order, by a service with `MEMORYPOOL_CACHE_MB`'s
 * budget and a stand-in encoder (the figure is the cache's, not the model's). Prints, every
 * quarter of the users, the estimate beside the live memory after a forced GC (V8 heap plus
 * array buffers, over the service's own baseline) and RSS with and without that GC.
 *
 *   npm run build && node --expose-gc dist/bench/cache-footprint.js [--users 2000] [--memories 20] [--budget-mb 32] [--postgres]
 *
 * `--postgres`: the users live in a throwaway PostgreSQL instead (written through the store, as
 * the replica bench writes its touched users), and the service is a replica of it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { Embedder } from '../src/embedding/embedder.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import { openStore } from '../src/open-service.js';
import { JsonlMemoryStore } from '../src/store/jsonl-memory-store.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { writeStoreUsers } from './replicas-store.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from './throwaway-postgres.js';
import { round } from './http-load.js';
import { gaussianSource, randomUnitVector } from './scale-store.js';
import { serverEncoder } from './server-encoder.js';
import { DEFAULT_LOCOMO, loadWorkload, mulberry32 } from './workload.js';

const MB = 1024 * 1024;

function argument(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at === -1 ? fallback : Number(process.argv[at + 1]);
}

function live(): { heap_mb: number; buffers_mb: number; rss_mb: number } {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  gc();
  const usage = process.memoryUsage();
  return { heap_mb: round(usage.heapUsed / MB, 1), buffers_mb: round(usage.arrayBuffers / MB, 1), rss_mb: round(usage.rss / MB, 1) };
}

async function main(): Promise<void> {
  const users = argument('--users', 2000);
  const memories = argument('--memories', 20);
  const budgetMb = argument('--budget-mb', 32);
  const { modelId, dimensions } = serverEncoder(); // identity only: the model is not loaded
  const texts = (await loadWorkload(DEFAULT_LOCOMO)).conversations.flatMap((conversation) => conversation.turns);
  const gaussian = gaussianSource(mulberry32(users * memories));
  const vector = (): Float32Array => randomUnitVector(new Float32Array(dimensions), gaussian);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-cache-footprint-'));
  const postgres: ThrowawayPostgres | null = process.argv.includes('--postgres') ? await startThrowawayPostgres({ fsync: false }) : null;
  try {
    const databaseUrl = postgres ? await postgres.createDatabase('footprint') : undefined;
    const userIds = Array.from({ length: users }, (_, user) => `touched-${user}`);
    if (databaseUrl) {
      const store = new PostgresStore({ url: databaseUrl, logger: silentLogger() });
      await store.init();
      await writeStoreUsers({ store, users, memoriesPerUser: memories, prefix: 'touched', texts, seed: users });
      await store.close();
    } else {
      const store = new JsonlMemoryStore(dataDir, silentLogger());
      await store.init();
      const now = new Date().toISOString();
      for (let user = 0; user < users; user++) {
        const userId = userIds[user];
        const drafts = Array.from({ length: memories }, (_, i) => {
          const turn = texts[(user * memories + i) % texts.length];
          const record = { id: `${user}-${i}`, user_id: userId, text: turn.content, tags: [], importance: 0.5, source: 'add', created_at: now, session_id: 's1', role: turn.speaker, occurred_at: now, request_id: `r${user}`, message_index: i, model: modelId };
          return { record, vector: vector() };
        });
        await store.append(userId, drafts, { requestId: `r${user}` });
      }
      await store.close();
    }

    const embedder: Embedder = { modelId, dimensions, ready: async () => {}, close: async () => {}, embed: async (batch) => batch.map(() => vector()) };
    const service = await MemoryService.open({ store: openStore({ dataDir, databaseUrl }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0, cacheBytes: budgetMb * MB });
    const baseline = live();
    let maxRss = 0;
    const rows = [];
    for (let user = 0; user < users; user++) {
      await service.search({ userId: userIds[user], query: 'what did they talk about last time', limit: 10 });
      maxRss = Math.max(maxRss, process.memoryUsage().rss);
      if ((user + 1) % Math.max(1, Math.floor(users / 4)) === 0 || user === users - 1) {
        const now = live();
        const cache = service.cacheStats();
        rows.push({
          touched: user + 1,
          cached_users: cache.users,
          estimate_mb: round(cache.estimated_bytes / MB, 1),
          live_over_baseline_mb: round(now.heap_mb + now.buffers_mb - baseline.heap_mb - baseline.buffers_mb, 1),
          rss_over_baseline_mb: round(now.rss_mb - baseline.rss_mb, 1),
          max_rss_over_baseline_mb_without_gc: round(maxRss / MB - baseline.rss_mb, 1),
        });
      }
    }
    await service.close();
    console.log(JSON.stringify({ store: databaseUrl ? 'postgres' : 'jsonl', users, memories_per_user: memories, budget_mb: budgetMb, baseline, rows }, null, 2));
  } finally {
    await postgres?.destroy();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
