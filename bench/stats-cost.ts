#!/usr/bin/env node
import path from 'node:path';
import { cpus, loadavg } from 'node:os';
import { parseArgs } from 'node:util';
import { LoopbackClient, round } from './http-load.js';
import { cpuNs, median, waitHealthy } from './interleaved-servers.js';
import { DEFAULT_STORES_DIR } from './many-users.js';
import { ServerProcess } from './server-process.js';

/**
 * `node dist/bench/stats-cost.js [--data <data dir>] [--against <other checkout>] [--rounds 3] [--calls 10]`:
 * what one `/mem/stats` call costs the server (CPU of every thread, from schedstat) and its
 * caller (wall time), on a data directory of many users: by default the many-users bench's
 * 100,000-user JSONL store (`node dist/bench/many-users.js --store jsonl` writes it). Each round
 * starts a server on the directory, makes 2 calls unmeasured (the first reads the saved
 * figures), then `--calls` measured ones; with `--against`, a server of the other checkout's
 * build (its `dist`) does the same in turn, round by round, and the ratio is printed. The server
 * runs as the many-users bench runs it (`MEMORYPOOL_CACHE_MB=128`). A benchmark: it prints, it
 * never fails.
 */

const { values } = parseArgs({
  options: {
    data: { type: 'string', default: path.join(DEFAULT_STORES_DIR, 'jsonl-u100000-s29-v3') },
    against: { type: 'string' },
    rounds: { type: 'string', default: '3' },
    calls: { type: 'string', default: '10' },
  },
});
const rounds = Number(values.rounds);
const calls = Number(values.calls);
const builds = [{ name: 'this', entry: undefined as string | undefined }, ...(values.against ? [{ name: 'against', entry: path.resolve(values.against, 'dist/src/main.js') }] : [])];
const figures = Object.fromEntries(builds.map((build) => [build.name, { cpu_ms: [] as number[], wall_ms: [] as number[] }]));
let bytes = 0;

async function measure(build: (typeof builds)[number]): Promise<void> {
  const server = await ServerProcess.start({ dataDir: values.data!, entry: build.entry, env: { MEMORYPOOL_CACHE_MB: '128' } });
  const client = new LoopbackClient(server.url, 1);
  try {
    await waitHealthy(server.url);
    for (let i = 0; i < 2; i++) await client.get('/mem/stats', 120_000);
    for (let i = 0; i < calls; i++) {
      const before = await cpuNs(server.pid);
      const answer = await client.get('/mem/stats', 120_000);
      const after = await cpuNs(server.pid);
      if (answer.status !== 200) throw new Error(`${build.name}: /mem/stats answered ${answer.status}`);
      bytes = Buffer.byteLength(answer.text);
      figures[build.name].cpu_ms.push((after - before) / 1e6);
      figures[build.name].wall_ms.push(answer.ms);
    }
  } finally {
    client.close();
    await server.stop();
  }
}

try {
  for (let round = 0; round < rounds; round++) for (const build of round % 2 === 0 ? builds : [...builds].reverse()) await measure(build);
  const summary = Object.fromEntries(builds.map((build) => [build.name, { cpu_ms_p50: round(median(figures[build.name].cpu_ms), 1), wall_ms_p50: round(median(figures[build.name].wall_ms), 1) }]));
  const result = {
    cpu: cpus()[0]?.model ?? 'unknown',
    node: process.version,
    data: values.data,
    answer_bytes: bytes,
    rounds,
    calls_per_round: calls,
    ...summary,
    ...(values.against ? { cpu_this_over_against: round(summary.this.cpu_ms_p50 / summary.against.cpu_ms_p50, 3) } : {}),
    load_average_1m: round(loadavg()[0], 2),
  };
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} finally {
  await ServerProcess.stopAll();
}
