#!/usr/bin/env node
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createReranker } from '../src/embedding/create-reranker.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import type { SearchRequest } from '../src/memory/types.js';
import { openStore } from '../src/open-service.js';
import { writeTinyCrossEncoder } from '../test/support/tiny-cross-encoder.js';
import { searchUsers } from './search-users.js';
import { DEFAULT_LOCOMO } from './workload.js';

/**
 * `node dist/bench/rerank-cost.js [--locomo <file>] [--rounds 3] [--top 50]`: what a reranker
 * costs a Search, in one run, on search-cost.ts's data (LoCoMo's two longest conversations, every
 * question, top_k 100, the platform profile, query vectors computed beforehand). Three services on
 * the same data directory, rounds alternating: no reranker configured; the reranker configured
 * but each Search sent with `rerank: false`; the reranker on (the top `--top` re-scored). Each
 * reports CPU per Search of the whole process (the reranker's thread included) and of the main
 * thread alone (its event loop's busy time), and the ratios to "none". The first two must answer
 * alike (`differing_off_vs_none: 0`).
 *
 * The reranker is the tests' tiny cross-encoder (test/support/tiny-cross-encoder.ts: 16 hidden
 * units, one layer, pairs cut at 64 tokens): no real cross-encoder can be downloaded here, so its
 * figures bound the machinery (tokenizing the pairs, the thread round trip, the blend), not a
 * MiniLM's inference, which costs far more per pair. A benchmark: it prints, it never fails.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({ options: { locomo: { type: 'string', default: DEFAULT_LOCOMO }, rounds: { type: 'string', default: '3' }, top: { type: 'string', default: '50' } } });
  const rounds = Number(values.rounds);
  const users = await searchUsers(values.locomo!);
  const modelDir = await mkdtemp(path.join(tmpdir(), 'memorypool-rerank-cost-'));
  await writeTinyCrossEncoder(modelDir);
  const reranker = createReranker({ rerankerDir: modelDir })!;
  const { dataDir, embedder, questions } = users;
  const open = (rerank?: boolean) =>
    MemoryService.open({
      store: openStore({ dataDir }, silentLogger()),
      embedder,
      preload: false,
      indexFlushDelayMs: 0,
      ...(rerank ? { rerank: { reranker, top: Number(values.top), weight: 0.5 } } : {}),
    });
  const targets: Array<{ name: 'none' | 'off' | 'on'; service: MemoryService; rerank?: boolean }> = [];
  try {
    await reranker.ready();
    targets.push({ name: 'none', service: await open() }, { name: 'off', service: await open(true), rerank: false }, { name: 'on', service: await open(true) });
    const request = (query: string, userId: string, rerank?: boolean): SearchRequest => ({ userId, query, limit: 100, profile: 'platform', ...(rerank === undefined ? {} : { rerank }) });

    const answers = new Map<string, string[]>();
    for (const target of targets) {
      const out: string[] = [];
      for (const { query, userId } of questions) out.push(JSON.stringify(await target.service.search(request(query, userId, target.rerank))));
      answers.set(target.name, out);
    }
    const cpu = new Map<string, number[]>(targets.map((target) => [target.name, []]));
    const main = new Map<string, number[]>(targets.map((target) => [target.name, []]));
    for (let round = 0; round < rounds; round++) {
      // Each round in another order: whoever follows the reranker's garbage pays for it in turn.
      for (const target of [...targets.slice(round % targets.length), ...targets.slice(0, round % targets.length)]) {
        const started = process.cpuUsage();
        const loop = performance.eventLoopUtilization();
        for (const { query, userId } of questions) await target.service.search(request(query, userId, target.rerank));
        const used = process.cpuUsage(started);
        const busy = performance.eventLoopUtilization(loop);
        cpu.get(target.name)!.push((used.user + used.system) / 1000 / questions.length);
        main.get(target.name)!.push(busy.active / questions.length);
      }
    }
    // The least of the rounds: on a shared machine the others' load only ever adds.
    const best = (values: number[]) => Math.min(...values);
    const figures = (table: Map<string, number[]>) => ({
      ms_per_search: Object.fromEntries([...table].map(([name, values]) => [name, values.map((value) => +value.toFixed(3))])),
      best: Object.fromEntries([...table].map(([name, values]) => [name, +best(values).toFixed(3)])),
      off_over_none: +(best(table.get('off')!) / best(table.get('none')!)).toFixed(3),
      on_over_none: +(best(table.get('on')!) / best(table.get('none')!)).toFixed(3),
    });
    const none = answers.get('none')!;
    const result = {
      searches_per_round: questions.length,
      reranked_per_search: Number(values.top),
      reranker: reranker.modelId,
      process_cpu: figures(cpu),
      main_thread: figures(main),
      differing_off_vs_none: answers.get('off')!.filter((answer, i) => answer !== none[i]).length,
      differing_on_vs_none: answers.get('on')!.filter((answer, i) => answer !== none[i]).length,
      load_average_1m: +loadavg()[0].toFixed(2),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const target of targets) await target.service.close();
    await reranker.close();
    await users.close();
    await rm(modelDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`rerank-cost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
