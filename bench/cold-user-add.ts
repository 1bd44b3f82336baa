/**
 * What an Add to a cold user costs: the CPU of one `POST /mem`-style Add (`addMemory`) to each of
 * N users of 10-50 memories (the many-users bench's users, LoCoMo turns) that the service does not
 * hold, in a JSONL data directory, with a stand-in encoder (a fixed vector: the figure is the
 * service's and the store's, not the model's). The many-users bench's random-user Adds go to
 * users of its own that start empty (its stores are kept between runs); this one writes to users
 * that already hold memories, as most writes of a service of many users do.
 *
 *   node dist/bench/cold-user-add.js [--users 2000] [--block 100] [--against <other checkout>] [--postgres]
 *
 * `--postgres`: the users live in a throwaway PostgreSQL instead (fsync on), a database for each
 * build written through that build's own store (a build refuses a schema newer than its own).
 *
 * With `--against`, a service of another checkout's compiled code (its `dist`) adds to the same
 * users too, block for block in turn with this build's, each with a cache of its own (so every
 * Add is to a user that service does not hold), in this one process; the ratio this / other is
 * printed. The first block, which warms the JIT, is not counted. A benchmark: it prints, it never fails.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os, { cpus } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Embedder } from '../src/embedding/embedder.js';
import { silentLogger } from '../src/logger.js';
import * as memoryService from '../src/memory/memory-service.js';
import * as jsonlStore from '../src/store/jsonl-memory-store.js';
import type { MemoryStore } from '../src/store/memory-store.js';
import * as postgresStore from '../src/store/postgres-store.js';
import { round } from './http-load.js';
import { median } from './interleaved-servers.js';
import { plannedUsers, writeManyUsers } from './many-users-store.js';
import { serverEncoder } from './server-encoder.js';
import { startThrowawayPostgres, type ThrowawayPostgres } from './throwaway-postgres.js';
import { DEFAULT_LOCOMO, loadWorkload } from './workload.js';

interface Build {
  name: string;
  service: memoryService.MemoryService;
  perAdd: number[];
}

interface Modules {
  memoryService: typeof memoryService;
  jsonlStore: typeof jsonlStore;
  postgresStore: typeof postgresStore;
}

type User = ReturnType<typeof plannedUsers>[number];

/** The build's service on its store: the JSONL directory written once, or a database of its own written through the build's store. */
async function openBuild(name: string, modules: Modules, where: { dataDir: string } | { postgres: ThrowawayPostgres }, users: readonly User[], texts: Parameters<typeof writeManyUsers>[2], embedder: Embedder): Promise<Build> {
  let store: MemoryStore;
  if ('dataDir' in where) {
    store = new modules.jsonlStore.JsonlMemoryStore(where.dataDir, silentLogger());
  } else {
    const url = await where.postgres.createDatabase(`cold_add_${name}`);
    const writer = new modules.postgresStore.PostgresStore({ url, logger: silentLogger() });
    await writer.init();
    await writeManyUsers(writer, users, texts, 29);
    await writer.close();
    store = new modules.postgresStore.PostgresStore({ url, logger: silentLogger() });
  }
  const service = await modules.memoryService.MemoryService.open({ store, embedder, logger: silentLogger(), preload: false });
  return { name, service, perAdd: [] };
}

/** One Add to each of `ids` with the build's service; the CPU per Add (µs). */
async function addBlock(build: Build, ids: readonly string[], round: number): Promise<number> {
  const started = process.cpuUsage();
  for (const userId of ids) await build.service.addMemory({ userId, text: `${build.name} wrote this to ${userId} in round ${round}: the kettle is in the blue cupboard` });
  const used = process.cpuUsage(started);
  return (used.user + used.system) / ids.length;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      users: { type: 'string', default: '2000' },
      block: { type: 'string', default: '100' },
      locomo: { type: 'string', default: DEFAULT_LOCOMO },
      against: { type: 'string' },
      postgres: { type: 'boolean', default: false },
    },
  });
  const block = Number(values.block);
  const work = await mkdtemp(path.join(os.tmpdir(), 'memorypool-cold-user-add-'));
  const { modelId, dimensions } = serverEncoder(); // the stored vectors' model: nothing is re-embedded
  const vector = new Float32Array(dimensions).fill(1 / Math.sqrt(dimensions));
  const embedder: Embedder = { modelId, dimensions, ready: async () => {}, close: async () => {}, embed: async (texts) => texts.map(() => vector) };
  const builds: Build[] = [];
  const postgres = values.postgres ? await startThrowawayPostgres() : null;
  try {
    const users = plannedUsers({ users: Number(values.users), seed: 29 });
    const texts = (await loadWorkload(values.locomo!)).conversations.flatMap((conversation) => conversation.turns);
    if (!postgres) {
      const writer = new jsonlStore.JsonlMemoryStore(work, silentLogger());
      await writer.init();
      await writeManyUsers(writer, users, texts, 29);
      await writer.close();
    }
    const where = postgres ? { postgres } : { dataDir: work };
    builds.push(await openBuild('this', { memoryService, jsonlStore, postgresStore }, where, users, texts, embedder));
    if (values.against !== undefined) {
      const other = path.resolve(values.against, 'dist');
      const load = <T>(file: string): Promise<T> => import(pathToFileURL(path.join(other, file)).href) as Promise<T>;
      const modules = { memoryService: await load<typeof memoryService>('src/memory/memory-service.js'), jsonlStore: await load<typeof jsonlStore>('src/store/jsonl-memory-store.js'), postgresStore: await load<typeof postgresStore>('src/store/postgres-store.js') };
      builds.push(await openBuild('against', modules, where, users, texts, embedder));
    }
    let blockNumber = 0;
    for (let at = 0; at < users.length; at += block, blockNumber++) {
      const ids = users.slice(at, at + block).map((user) => user.userId);
      for (const build of blockNumber % 2 === 0 ? builds : [...builds].reverse()) {
        const cost = await addBlock(build, ids, blockNumber);
        if (at > 0) build.perAdd.push(cost);
      }
    }
    const [self, other] = builds as [Build, Build | undefined];
    const result = {
      store: postgres ? 'postgres' : 'jsonl',
      cpu: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      users: users.length,
      memories_per_user: round(users.reduce((sum, user) => sum + user.memories, 0) / users.length, 1),
      blocks_measured: self.perAdd.length,
      cpu_us_per_add: round(median(self.perAdd), 0),
      users_held_after: self.service.cacheStats().users,
      ...(other
        ? {
            against: path.resolve(values.against!),
            against_cpu_us_per_add: round(median(other.perAdd), 0),
            against_users_held_after: other.service.cacheStats().users,
            ratio_this_over_against: round(median(self.perAdd) / median(other.perAdd), 3),
          }
        : {}),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const build of builds) await build.service.close();
    await postgres?.destroy();
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`cold-user-add: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
