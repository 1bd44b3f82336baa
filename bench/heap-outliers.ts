#!/usr/bin/env node
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { measureRounds, median, roundRatio, seedSearchData, startVariants } from './interleaved-servers.js';
import { ServerProcess } from './server-process.js';
import { DEFAULT_LOCOMO } from './workload.js';

/**
 * `node dist/bench/heap-outliers.js [--processes 6] [--rounds 6] [--searches 150] [--block 10]`:
 * how many server processes pay far more CPU per cached Search than their siblings, with the
 * server's heap headroom (src/heap-headroom.ts, the default) and with V8's own growing factors
 * (`node --heap-growing-percent=0`, which the server leaves alone), in one run: `--processes` of
 * each, started alternately, measured side by side (interleaved-servers.ts). A process is an
 * outlier when its median CPU per Search is over `OUTLIER` times the median of every process's
 * median. Outliers come to one process in three to ten (bench/HISTORY.md, "Servers that collect
 * all the time"), so a run wants several processes a variant. A benchmark: it prints, it never fails.
 */

const OUTLIER = 1.3;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { processes: { type: 'string', default: '6' }, rounds: { type: 'string', default: '6' }, searches: { type: 'string', default: '150' }, block: { type: 'string', default: '10' }, locomo: { type: 'string', default: DEFAULT_LOCOMO } },
  });
  const processes = Number(values.processes);
  const work = await mkdtemp(path.join(tmpdir(), 'memorypool-heap-outliers-'));
  try {
    const { seedDir, questions } = await seedSearchData(work, values.locomo!);
    const variants = [{ name: 'headroom' }, { name: 'v8_factors', nodeArgs: ['--heap-growing-percent=0'] }];
    const servers = await startVariants(work, seedDir, variants, processes);
    await measureRounds(servers, questions, { rounds: Number(values.rounds), perRound: Number(values.searches), block: Number(values.block) });
    for (const measured of servers) {
      measured.client.close();
      await measured.server.stop();
    }
    const medians = servers.map((measured) => median(measured.rounds) / 1000);
    const typical = median(medians);
    const byVariant = (name: string) => {
      const own = medians.filter((_, i) => servers[i].variant === name);
      return { cpu_us_per_search_each_process: own.map((value) => +value.toFixed(1)), outliers: own.filter((value) => value > OUTLIER * typical).length, processes: own.length };
    };
    const ratio = roundRatio(servers, 'v8_factors', 'headroom');
    const result = {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      node: process.version,
      memories: 'LoCoMo: the two longest conversations',
      rounds: Number(values.rounds),
      searches_per_round: Number(values.searches),
      typical_cpu_us_per_search: +typical.toFixed(1),
      outlier_above: `${OUTLIER} x typical`,
      headroom: byVariant('headroom'),
      v8_factors: byVariant('v8_factors'),
      v8_factors_over_headroom: ratio?.median,
      v8_factors_over_headroom_quartiles: ratio?.quartiles,
      load_average_1m: +loadavg()[0].toFixed(2),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await ServerProcess.stopAll();
    await rm(work, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`heap-outliers: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
