/**
 * What storing each memory's terms and cues (`fx`, src/memory/unit-features.ts) saves a load:
 * the CPU to load a user from a JSONL data directory and make it searchable (store.load, then
 * admitUnits, as the cache does for a cold user), with the features stored and without.
 *
 *   node --import tsx bench/stored-features.ts [--users 4000] [--block 200]
 *
 * One store of `--users` users of 10-50 LoCoMo turns (bench/many-users-store.ts: the many-users
 * bench's users) is written once, then copied with `fx` cut from every line: the two differ in
 * that alone. Blocks of `--block` users are loaded from each in turn (each user once from each,
 * which one goes first alternating), so that both are measured over the same seconds; the figure
 * is the median over blocks of the CPU a user. Printed with the disk bytes a memory of each.
 * A benchmark: it prints, it never fails.
 */
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os, { cpus } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { silentLogger } from '../src/logger.js';
import { admitUnits, emptyUserState } from '../src/memory/user-state.js';
import { JsonlMemoryStore } from '../src/store/jsonl-memory-store.js';
import { median } from './interleaved-servers.js';
import { plannedUsers, writeManyUsers } from './many-users-store.js';
import { DEFAULT_LOCOMO, loadWorkload } from './workload.js';

const round = (value: number, digits = 0) => Number(value.toFixed(digits));

async function memoryFiles(dataDir: string): Promise<string[]> {
  const users = path.join(dataDir, 'users');
  return (await readdir(users)).map((folder) => path.join(users, folder, 'memories.jsonl'));
}

async function bytesPerMemory(files: readonly string[]): Promise<number> {
  let bytes = 0;
  let lines = 0;
  for (const file of files) {
    const content = await readFile(file);
    bytes += content.length;
    for (const byte of content) if (byte === 10) lines++;
  }
  return bytes / lines;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { users: { type: 'string', default: '4000' }, block: { type: 'string', default: '200' }, locomo: { type: 'string', default: DEFAULT_LOCOMO } } });
  const block = Number(values.block);
  const work = await mkdtemp(path.join(os.tmpdir(), 'memorypool-stored-features-'));
  const logger = silentLogger();
  try {
    const users = plannedUsers({ users: Number(values.users), seed: 29 });
    const workload = await loadWorkload(values.locomo!);
    const dirs = { with: path.join(work, 'with'), without: path.join(work, 'without') };
    const writer = new JsonlMemoryStore(dirs.with, logger);
    await writer.init();
    await writeManyUsers(writer, users, workload.conversations.flatMap((conversation) => conversation.turns), 29);
    await writer.close();
    await cp(dirs.with, dirs.without, { recursive: true });
    for (const file of await memoryFiles(dirs.without)) {
      const lines = (await readFile(file, 'utf8')).split('\n').filter((line) => line !== '');
      await writeFile(file, lines.map((line) => { const { fx: _fx, ...record } = JSON.parse(line) as Record<string, unknown>; return JSON.stringify(record); }).join('\n') + '\n');
    }
    const stores = { with: new JsonlMemoryStore(dirs.with, logger), without: new JsonlMemoryStore(dirs.without, logger) };
    await stores.with.init();
    await stores.without.init();

    const figures = { with: { load: [] as number[], admit: [] as number[] }, without: { load: [] as number[], admit: [] as number[] } };
    const loadBlock = async (which: 'with' | 'without', ids: readonly string[], record: boolean) => {
      let load = 0;
      let admit = 0;
      for (const userId of ids) {
        const started = process.cpuUsage();
        const snapshot = await stores[which].load(userId);
        const loaded = process.cpuUsage(started);
        admitUnits(emptyUserState(userId, snapshot.version), snapshot.units, { strings: new Map() });
        const admitted = process.cpuUsage(started);
        load += loaded.user + loaded.system;
        admit += admitted.user + admitted.system - (loaded.user + loaded.system);
      }
      if (record) {
        figures[which].load.push(load / ids.length);
        figures[which].admit.push(admit / ids.length);
      }
    };
    // The first block warms the JIT on both, unmeasured.
    for (let at = 0, k = 0; at < users.length; at += block, k++) {
      const ids = users.slice(at, at + block).map((user) => user.userId);
      for (const which of k % 2 ? (['without', 'with'] as const) : (['with', 'without'] as const)) await loadBlock(which, ids, k > 0);
    }
    const row = (which: 'with' | 'without') => ({ load_us: round(median(figures[which].load)), admit_us: round(median(figures[which].admit)), total_us: round(median(figures[which].load) + median(figures[which].admit)) });
    const result = {
      cpu: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      users: users.length,
      memories_per_user: round(users.reduce((sum, user) => sum + user.memories, 0) / users.length, 1),
      blocks_measured: figures.with.load.length,
      cpu_per_user_without_features: row('without'),
      cpu_per_user_with_features: row('with'),
      with_over_without: round(row('with').total_us / row('without').total_us, 3),
      disk_bytes_per_memory: { with: round(await bytesPerMemory(await memoryFiles(dirs.with))), without: round(await bytesPerMemory(await memoryFiles(dirs.without))) },
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    await stores.with.close();
    await stores.without.close();
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`stored-features: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
