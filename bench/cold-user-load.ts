/**
 * What loading a cold user costs: the CPU to read a user of 10-50 memories from a JSONL data
 * directory and make it searchable (store.load, then admitUnits, as the cache does for a user a
 * Search finds out of memory), per user, the part a random-user load (bench/many-users.ts) pays
 * on every cache miss.
 *
 *   node --import tsx bench/cold-user-load.ts [--users 4000] [--block 200]
 *
 * `--users` users (bench/many-users-store.ts: the many-users bench's users, LoCoMo turns) are
 * written once; then each is loaded once, in blocks of `--block`, and the figure is the median
 * over blocks of the CPU a user (the first block, which warms the JIT, not counted). To compare
 * two builds, run this file in both checkouts, one after the other. A benchmark: it prints, it
 * never fails.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os, { cpus } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { silentLogger } from '../src/logger.js';
import { admitUnits, emptyUserState } from '../src/memory/user-state.js';
import { JsonlMemoryStore } from '../src/store/jsonl-memory-store.js';
import { round } from './http-load.js';
import { median } from './interleaved-servers.js';
import { plannedUsers, writeManyUsers } from './many-users-store.js';
import { DEFAULT_LOCOMO, loadWorkload } from './workload.js';

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { users: { type: 'string', default: '4000' }, block: { type: 'string', default: '200' }, locomo: { type: 'string', default: DEFAULT_LOCOMO } } });
  const block = Number(values.block);
  const work = await mkdtemp(path.join(os.tmpdir(), 'memorypool-cold-user-load-'));
  const logger = silentLogger();
  try {
    const users = plannedUsers({ users: Number(values.users), seed: 29 });
    const workload = await loadWorkload(values.locomo!);
    const writer = new JsonlMemoryStore(work, logger);
    await writer.init();
    await writeManyUsers(writer, users, workload.conversations.flatMap((conversation) => conversation.turns), 29);
    await writer.close();
    const store = new JsonlMemoryStore(work, logger);
    await store.init();
    const loads: number[] = [];
    const admits: number[] = [];
    for (let at = 0; at < users.length; at += block) {
      let load = 0;
      let admit = 0;
      const ids = users.slice(at, at + block).map((user) => user.userId);
      for (const userId of ids) {
        const started = process.cpuUsage();
        const snapshot = await store.load(userId);
        const loaded = process.cpuUsage(started);
        admitUnits(emptyUserState(userId, snapshot.version), snapshot.units, { strings: new Map() });
        const admitted = process.cpuUsage(started);
        load += loaded.user + loaded.system;
        admit += admitted.user + admitted.system - (loaded.user + loaded.system);
      }
      if (at > 0) {
        loads.push(load / ids.length);
        admits.push(admit / ids.length);
      }
    }
    const result = {
      cpu: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      users: users.length,
      memories_per_user: round(users.reduce((sum, user) => sum + user.memories, 0) / users.length, 1),
      blocks_measured: loads.length,
      cpu_us_per_user: { load: round(median(loads), 0), admit: round(median(admits), 0), total: round(median(loads) + median(admits), 0) },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    await store.close();
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`cold-user-load: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
