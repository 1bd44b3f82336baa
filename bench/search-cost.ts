#!/usr/bin/env node
import { loadavg } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { MemoryService } from '../src/memory/memory-service.js';
import { silentLogger } from '../src/logger.js';
import { openStore } from '../src/open-service.js';
import { searchUsers } from './search-users.js';
import { DEFAULT_LOCOMO } from './workload.js';

/**
 * `node dist/bench/search-cost.js [--locomo <file>] [--rounds 4] [--base <dist dir>]`: what one
 * Search costs this thread, the encoder left out. The bench's Search users (LoCoMo's two longest
 * conversations, ~690 memories each, the real encoder's vectors: search-users.ts) are ingested
 * once; then every LoCoMo question is searched (top_k 100, the platform profile) `rounds` times
 * with its query vector already computed, so the CPU per Search is scoring and building the hits.
 *
 * With `--base`, the `dist/` of another build (e.g. the commit before a change, built in a
 * checkout of its own) searches the very same data in the same process, rounds alternating, and
 * every answer of both (ids, unrounded scores, explanation terms) is compared: a scoring change
 * meant to be faster only must report `differing: 0`. A benchmark: it prints, it never fails.
 */
interface Target {
  name: string;
  service: MemoryService;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { locomo: { type: 'string', default: DEFAULT_LOCOMO }, rounds: { type: 'string', default: '4' }, base: { type: 'string' } } });
  const rounds = Number(values.rounds);
  const users = await searchUsers(values.locomo!);
  const { dataDir, embedder, questions } = users;
  const targets: Target[] = [];
  try {
    targets.push({ name: 'this build', service: await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 }) });
    if (values.base !== undefined) {
      const load = async <T>(file: string) => (await import(pathToFileURL(path.resolve(values.base!, file)).href)) as T;
      const { MemoryService: BaseService } = await load<{ MemoryService: { open(options: object): Promise<MemoryService> } }>('src/memory/memory-service.js');
      const { openStore: baseStore } = await load<{ openStore: (location: object, logger: object) => object }>('src/open-service.js');
      targets.push({ name: `base (${values.base})`, service: await BaseService.open({ store: baseStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 }) });
    }

    const answers = new Map<string, string[]>();
    for (const target of targets) {
      const out: string[] = [];
      for (const { query, userId } of questions) {
        const hits = await target.service.search({ userId, query, limit: 100, profile: 'platform', explain: true });
        out.push(JSON.stringify(hits.map((hit) => [hit.memory.id, hit.score, hit.explanation])));
      }
      answers.set(target.name, out);
    }
    const cpuMs = new Map<string, number[]>(targets.map((target) => [target.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const target of targets) {
        const started = process.cpuUsage();
        for (const { query, userId } of questions) await target.service.search({ userId, query, limit: 100, profile: 'platform' });
        const used = process.cpuUsage(started);
        cpuMs.get(target.name)!.push(+((used.user + used.system) / 1000 / questions.length).toFixed(3));
      }
    }
    const [mine, base] = targets.map((target) => answers.get(target.name)!);
    const result = {
      memories: (await targets[0].service.exportUnits(users.userIds[0]!)).length + (await targets[0].service.exportUnits(users.userIds[1]!)).length,
      searches_per_round: questions.length,
      cpu_ms_per_search: Object.fromEntries(cpuMs),
      ...(base === undefined ? {} : { differing: mine.filter((answer, i) => answer !== base[i]).length }),
      load_average_1m: +loadavg()[0].toFixed(2),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const target of targets) await target.service.close();
    await users.close();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`search-cost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
