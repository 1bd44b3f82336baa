/**
 * What loading a cold user costs: the CPU to read a user of 10-50 memories from a JSONL data
 * directory and make it searchable (store.load, then admitUnits, as the cache does for a user a
 * Search finds out of memory), per user, the part a random-user load (bench/many-users.ts) pays
 * on every cache miss.
 *
 *   node dist/bench/cold-user-load.js [--users 4000] [--block 200] [--against <other checkout>/dist]
 *
 * `--users` users (bench/many-users-store.ts: the many-users bench's users, LoCoMo turns) are
 * written once; then each is loaded once, in blocks of `--block`, and the figure is the median
 * over blocks of the CPU a user (the first block, which warms the JIT, not counted). With
 * `--against`, the compiled store and cache code of another checkout (built: its `dist` folder)
 * loads the same users too, block for block in turn with this build's, in this one process, and
 * the ratio this / other is printed: whole runs one after the other differ by more than most
 * changes do on a shared machine. A benchmark: it prints, it never fails.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os, { cpus } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { silentLogger } from '../src/logger.js';
import * as userState from '../src/memory/user-state.js';
import * as jsonlStore from '../src/store/jsonl-memory-store.js';
import { round } from './http-load.js';
import { median } from './interleaved-servers.js';
import { plannedUsers, writeManyUsers } from './many-users-store.js';
import { DEFAULT_LOCOMO, loadWorkload } from './workload.js';

/** The code a build loads a cold user with. */
interface Build {
  name: string;
  store: jsonlStore.JsonlMemoryStore;
  admitUnits: typeof userState.admitUnits;
  emptyUserState: typeof userState.emptyUserState;
  loads: number[];
  admits: number[];
}

async function openBuild(name: string, dataDir: string, modules: { userState: typeof userState; jsonlStore: typeof jsonlStore }): Promise<Build> {
  const store = new modules.jsonlStore.JsonlMemoryStore(dataDir, silentLogger());
  await store.init();
  return { name, store, admitUnits: modules.userState.admitUnits, emptyUserState: modules.userState.emptyUserState, loads: [], admits: [] };
}

/** Loads `ids` once each with the build's code; the CPU a user, load and admit apart. */
async function loadBlock(build: Build, ids: readonly string[]): Promise<{ load: number; admit: number }> {
  let load = 0;
  let admit = 0;
  for (const userId of ids) {
    const started = process.cpuUsage();
    const snapshot = await build.store.load(userId);
    const loaded = process.cpuUsage(started);
    build.admitUnits(build.emptyUserState(userId, snapshot.version), snapshot.units, { strings: new Map() });
    const admitted = process.cpuUsage(started);
    load += loaded.user + loaded.system;
    admit += admitted.user + admitted.system - (loaded.user + loaded.system);
  }
  return { load: load / ids.length, admit: admit / ids.length };
}

function figures(build: Build): { load: number; admit: number; total: number } {
  return { load: round(median(build.loads), 0), admit: round(median(build.admits), 0), total: round(median(build.loads) + median(build.admits), 0) };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      users: { type: 'string', default: '4000' },
      block: { type: 'string', default: '200' },
      locomo: { type: 'string', default: DEFAULT_LOCOMO },
      against: { type: 'string' },
    },
  });
  const block = Number(values.block);
  const work = await mkdtemp(path.join(os.tmpdir(), 'memorypool-cold-user-load-'));
  const logger = silentLogger();
  const builds: Build[] = [];
  try {
    const users = plannedUsers({ users: Number(values.users), seed: 29 });
    const workload = await loadWorkload(values.locomo!);
    const writer = new jsonlStore.JsonlMemoryStore(work, logger);
    await writer.init();
    await writeManyUsers(writer, users, workload.conversations.flatMap((conversation) => conversation.turns), 29);
    await writer.close();
    builds.push(await openBuild('this', work, { userState, jsonlStore }));
    if (values.against !== undefined) {
      const other = path.resolve(values.against);
      const load = <T>(file: string): Promise<T> => import(pathToFileURL(path.join(other, file)).href) as Promise<T>;
      builds.push(await openBuild(other, work, { userState: await load('src/memory/user-state.js'), jsonlStore: await load('src/store/jsonl-memory-store.js') }));
    }
    let blockNumber = 0;
    for (let at = 0; at < users.length; at += block, blockNumber++) {
      const ids = users.slice(at, at + block).map((user) => user.userId);
      // Each build loads the block (a build's cache is its own: every load is cold), in turn first.
      const order = blockNumber % 2 === 0 ? builds : [...builds].reverse();
      for (const build of order) {
        const cost = await loadBlock(build, ids);
        if (at === 0) continue;
        build.loads.push(cost.load);
        build.admits.push(cost.admit);
      }
    }
    const [self, other] = builds as [Build, Build | undefined];
    const result = {
      cpu: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      users: users.length,
      memories_per_user: round(users.reduce((sum, user) => sum + user.memories, 0) / users.length, 1),
      blocks_measured: self.loads.length,
      cpu_us_per_user: figures(self),
      ...(other
        ? {
            against: other.name,
            against_cpu_us_per_user: figures(other),
            ratio_this_over_against: round(figures(self).total / figures(other).total, 3),
          }
        : {}),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const build of builds) await build.store.close();
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`cold-user-load: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
