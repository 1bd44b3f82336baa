/**
 * The time to load a cold user from PostgreSQL: a user of 700 memories (35 Adds of 20 messages,
 * USE-lite's 512-dimensional vectors) written once, then read by services whose cache is empty.
 * Prints the store's read alone (one statement, rows decoded) and the first Search of a fresh
 * service (read, analyse, build the corpus, answer), beside a warm Search, as medians of N runs.
 *
 *   npm run build && node dist/bench/postgres-cold-load.js [--runs 15] [--database-url postgres://...]
 *
 * Without --database-url it starts a throwaway PostgreSQL (fsync on, as deployed) and removes it.
 */
import { performance } from 'node:perf_hooks';
import { HashEmbedder } from '../src/embedding/hash-embedder.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import { openStore } from '../src/open-service.js';
import { PostgresStore } from '../src/store/postgres-store.js';
import { startThrowawayPostgres } from './throwaway-postgres.js';

const MEMORIES = 700;
const PER_ADD = 20;
const DIMENSIONS = 512;
const WORDS = 'kettle lantern harbour violin garden pottery camping painting museum concert adoption school friend sister mother weekend summer winter beach mountain book movie recipe bakery running yoga guitar dog cat park'.split(' ');

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

function sentence(seed: number): string {
  const words = Array.from({ length: 18 }, (_, i) => WORDS[(seed * 7 + i * 13 + ((seed * i) % 5)) % WORDS.length]);
  return `I went to the ${words.join(' ')} last week and it was lovely (${seed}).`;
}

async function main(): Promise<void> {
  const runs = Number(argument('--runs') ?? 15);
  const external = argument('--database-url');
  const postgres = external ? null : await startThrowawayPostgres();
  try {
    const url = external ?? (await postgres!.createDatabase(`cold_load_${process.pid}`));
    const embedder = new HashEmbedder({ dimensions: DIMENSIONS });
    const userId = `cold-user-${process.pid}-${Date.now()}`;
    const writer = await MemoryService.open({ store: openStore({ databaseUrl: url }, silentLogger()), embedder, logger: silentLogger(), preload: false });
    for (let add = 0; add < MEMORIES / PER_ADD; add++) {
      await writer.addConversation({
        requestId: `r${add}`,
        userId,
        sessionId: `s${Math.floor(add / 5)}`,
        messages: Array.from({ length: PER_ADD }, (_, m) => ({ role: m % 2 ? 'Melanie' : 'Caroline', content: sentence(add * PER_ADD + m), timestamp: 1_683_554_160_000 + (add * PER_ADD + m) * 60_000 })),
      });
    }
    await writer.close();

    const storeRead: number[] = [];
    const coldSearch: number[] = [];
    const warmSearch: number[] = [];
    for (let run = 0; run < runs; run++) {
      const store = new PostgresStore({ url, logger: silentLogger() });
      await store.version(userId); // a connection, as a serving replica has one
      let started = performance.now();
      const snapshot = await store.load(userId);
      storeRead.push(performance.now() - started);
      if (snapshot.units.length !== MEMORIES) throw new Error(`loaded ${snapshot.units.length} memories, wrote ${MEMORIES}`);
      await store.close();

      const service = await MemoryService.open({ store: openStore({ databaseUrl: url }, silentLogger()), embedder, logger: silentLogger(), preload: false });
      await service.memoryCount(); // a connection
      const request = { userId, query: 'When did Caroline go to the pottery museum?', limit: 10 };
      started = performance.now();
      await service.search(request);
      coldSearch.push(performance.now() - started);
      started = performance.now();
      await service.search(request);
      warmSearch.push(performance.now() - started);
      await service.close();
    }
    const round = (value: number) => Math.round(value * 10) / 10;
    process.stdout.write(
      JSON.stringify(
        {
          memories: MEMORIES,
          dimensions: DIMENSIONS,
          runs,
          store_read_ms_p50: round(median(storeRead)),
          cold_user_first_search_ms_p50: round(median(coldSearch)),
          warm_search_ms_p50: round(median(warmSearch)),
          cold_load_ms_p50_estimate: round(median(coldSearch) - median(warmSearch)),
          goal_cold_load_ms: 50,
        },
        null,
        2,
      ) + '\n',
    );
  } finally {
    await postgres?.destroy();
  }
}

await main();
