#!/usr/bin/env node
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { startSpan, tracingEnabled } from '../src/telemetry/tracing.js';
import { LoopbackClient } from './http-load.js';
import { ServerProcess } from './server-process.js';
import { DEFAULT_LOCOMO, loadWorkload, sessionAdds } from './workload.js';

/**
 * `node dist/bench/tracing-cost.js [--base <checkout>] [--rounds 20] [--searches 150] [--processes 2] [--block 10]`:
 * what tracing costs a cached Search (issue 28, item 4), in one run. Real servers
 * (`dist/src/main.js`) serve copies of one data directory (LoCoMo's two longest conversations,
 * ~690 memories each, stored with the real encoder), `--processes` of each variant:
 * - `base`: the build of `--base`, a checkout of the code before tracing, built (`npm run build`);
 * - `off`: this build, no OTLP endpoint (the no-op path);
 * - `on`: this build exporting every span (OTEL_TRACES_SAMPLER=always_on, OTLP protobuf) to a
 *   receiver in this process that counts them and drops them;
 * - `sampled`: the same with one trace in ten sampled (OTEL_TRACES_SAMPLER=traceidratio, 0.1).
 * Every question is searched once on each server first, so its query vector is cached; then
 * rounds of `searches` Searches a server, one at a time over a keep-alive connection, sent in
 * blocks of `--block` that go round all the servers, so that every server of a round is measured
 * over the same seconds (a shared machine's speed drifts from one second to the next). Each
 * server's CPU over a round is read from /proc/<pid>/task/<tid>/schedstat (nanoseconds, every
 * thread): the client's CPU is this process's, not the server's. A variant's figure for a round is
 * its processes' CPU over their Searches; the ratios off/base and on/off are taken round by round,
 * then their median (with quartiles). Each process's own median is printed too: a process whose
 * heap V8 collects all the time costs up to twice its siblings' CPU (src/heap-headroom.ts), and
 * several processes a variant dilute one such process. Targets: ≤ 1.01 and
 * ≤ 1.10. A benchmark: it prints, it never fails.
 */

type Variant = 'base' | 'off' | 'on' | 'sampled';

interface Target {
  name: Variant;
  server: ServerProcess;
  client: LoopbackClient;
  /** CPU ns per Search, one entry a round. */
  rounds: number[];
  searches: number;
}

/** Nanoseconds on CPU of every thread of the process so far (schedstat's first field). */
async function cpuNs(pid: number): Promise<number> {
  let total = 0;
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').catch(() => '0');
    total += Number(stat.split(' ')[0]);
  }
  return total;
}

/** An OTLP/HTTP receiver that answers 200 and counts the Search operation spans it was sent (protobuf keeps span names as plain bytes). */
async function startReceiver(): Promise<{ url: string; searchSpans(): number; close(): Promise<void> }> {
  let searchSpans = 0;
  const marker = Buffer.from('memorypool.search');
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      for (let at = body.indexOf(marker); at >= 0; at = body.indexOf(marker, at + marker.length)) {
        // The operation's name, not its attributes' keys (memorypool.search.top_k, ...).
        if (body[at + marker.length] !== 0x2e) searchSpans++;
      }
      response.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    searchSpans: () => searchSpans,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { base: { type: 'string' }, rounds: { type: 'string', default: '20' }, searches: { type: 'string', default: '150' }, processes: { type: 'string', default: '2' }, block: { type: 'string', default: '10' }, locomo: { type: 'string', default: DEFAULT_LOCOMO } },
  });
  const rounds = Number(values.rounds);
  const perRound = Number(values.searches);
  const processes = Number(values.processes);
  const block = Number(values.block);
  const workload = await loadWorkload(values.locomo!);
  const conversations = [...workload.conversations].sort((a, b) => b.turns.length - a.turns.length).slice(0, 2);
  const questions = workload.conversations.flatMap((conversation) => conversation.questions).map((query, i) => JSON.stringify({ query, user_id: `cost-${conversations[i % 2].id}`, top_k: 10 }));
  const work = await mkdtemp(path.join(tmpdir(), 'memorypool-tracing-cost-'));
  const receiver = await startReceiver();
  const targets: Target[] = [];
  try {
    // The memories, stored once through a server of this build, then copied for each target.
    const seedDir = path.join(work, 'seed');
    const seed = await ServerProcess.start({ dataDir: seedDir, env: { MEMORYPOOL_ENCODER_WORKERS: '1' } });
    await waitHealthy(seed.url);
    const seeding = new LoopbackClient(seed.url, 1);
    for (const conversation of conversations) {
      for (const add of sessionAdds(conversation, `cost-${conversation.id}`, 64)) {
        const answer = await seeding.post('/add', JSON.stringify(add), 120_000);
        if (answer.status !== 200) throw new Error(`seeding Add answered ${answer.status}: ${answer.text}`);
      }
    }
    seeding.close();
    await seed.stop();

    const traced = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: 'always_on',
    };
    const plan: Array<{ name: Variant; entry?: string; env?: Record<string, string> }> = [
      ...(values.base === undefined ? [] : [{ name: 'base' as const, entry: path.resolve(values.base, 'dist/src/main.js') }]),
      { name: 'off' },
      { name: 'on', env: traced },
      // One trace in ten: what the context machinery costs the other nine, beside the exported one.
      { name: 'sampled', env: { ...traced, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' } },
    ];
    // The variants' processes alternate (off, on, sampled, off, on, ...), so that none starts after all of another's.
    for (let copy = 0; copy < processes; copy++) {
      for (const { name, entry, env } of plan) {
        const dataDir = path.join(work, `${name}-${copy}`);
        await cp(seedDir, dataDir, { recursive: true });
        const server = await ServerProcess.start({ dataDir, entry, env: { MEMORYPOOL_ENCODER_WORKERS: '1', ...env } });
        await waitHealthy(server.url);
        targets.push({ name, server, client: new LoopbackClient(server.url, 1), rounds: [], searches: 0 });
      }
    }
    // Every query once, so that its vector is cached; then a round unmeasured, for the JIT.
    for (const target of targets) {
      for (const body of questions) await search(target, body);
      for (let i = 0; i < perRound; i++) await search(target, questions[i % questions.length]);
    }
    let next = 0;
    for (let round = 0; round < rounds; round++) {
      const before = await Promise.all(targets.map((target) => cpuNs(target.server.pid)));
      // Blocks of `block` Searches go round the servers, each round starting at another one.
      for (let at = 0; at < perRound; at += block) {
        for (let k = 0; k < targets.length; k++) {
          const target = targets[(round + at / block + k) % targets.length];
          for (let i = at; i < Math.min(at + block, perRound); i++) await search(target, questions[(next + i) % questions.length]);
        }
      }
      const after = await Promise.all(targets.map((target) => cpuNs(target.server.pid)));
      targets.forEach((target, k) => {
        target.rounds.push((after[k] - before[k]) / perRound);
        target.searches += perRound;
      });
      next += perRound;
    }
    const on = targets.find((target) => target.name === 'on')!;
    // The spans still buffered (the batch processor's delay) are exported when it stops.
    const searchSpansBeforeStop = receiver.searchSpans();
    for (const target of targets) {
      target.client.close();
      await target.server.stop();
    }
    const variants = [...new Set(targets.map((target) => target.name))];
    // A variant's CPU per Search in each round: the mean over its processes.
    const perRoundOf = (name: Variant): number[] | undefined => {
      const own = targets.filter((target) => target.name === name);
      return own.length === 0 ? undefined : own[0].rounds.map((_, i) => own.reduce((sum, target) => sum + target.rounds[i], 0) / own.length);
    };
    const usPerSearch = Object.fromEntries(variants.map((name) => [name, +(median(perRoundOf(name)!) / 1000).toFixed(1)])) as Record<Variant, number>;
    const perProcess = Object.fromEntries(variants.map((name) => [name, targets.filter((target) => target.name === name).map((target) => +(median(target.rounds) / 1000).toFixed(1))]));
    // The ratio of each round's figures (the servers measured over the same seconds), then the median over rounds.
    const ratios = (a: Variant, b: Variant) => {
      const top = perRoundOf(a);
      const bottom = perRoundOf(b);
      return top && bottom ? top.map((value, i) => value / bottom[i]).sort((x, y) => x - y) : undefined;
    };
    const ratio = (a: Variant, b: Variant) => {
      const sorted = ratios(a, b);
      return sorted ? +median(sorted).toFixed(4) : undefined;
    };
    const spread = (a: Variant, b: Variant) => {
      const sorted = ratios(a, b);
      return sorted ? [+sorted[Math.floor(sorted.length / 4)].toFixed(4), +sorted[Math.floor((sorted.length * 3) / 4)].toFixed(4)] : undefined;
    };
    const result = {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memories: 'LoCoMo: the two longest conversations',
      node: process.version,
      processes_per_variant: processes,
      searches_per_server: on.searches,
      rounds,
      searches_per_round: perRound,
      block,
      cpu_us_per_search_median: usPerSearch,
      cpu_us_per_search_each_process: perProcess,
      off_over_base: ratio('off', 'base'),
      off_over_base_quartiles: spread('off', 'base'),
      noop_path_ns_per_search: +noopNsPerSearch().toFixed(0),
      noop_path_share_of_a_search: +(noopNsPerSearch() / 1000 / (usPerSearch.base ?? usPerSearch.off)).toFixed(5),
      on_over_off: ratio('on', 'off'),
      on_over_off_quartiles: spread('on', 'off'),
      sampled_10pct_over_off: ratio('sampled', 'off'),
      sampled_10pct_over_off_quartiles: spread('sampled', 'off'),
      search_spans_exported: receiver.searchSpans(),
      search_spans_exported_before_stop: searchSpansBeforeStop,
      // Warm-up Searches included; the sampled server's tenth of its traces are exported too.
      searches_sent_to_on: on.searches + questions.length + perRound,
      searches_sent_to_sampled: on.searches + questions.length + perRound,
      load_average_1m: +loadavg()[0].toFixed(2),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await ServerProcess.stopAll();
    await receiver.close();
    await rm(work, { recursive: true, force: true });
  }
}

/**
 * The no-op path on its own, timed in this process (which traces nothing): what a cached Search
 * calls of tracing.ts while tracing is off (the service operation's check, the retrieval
 * span) and the request id fastify draws for it. Far below what the three servers' figures can
 * resolve on a loaded machine, so it is printed beside them as the bound it is.
 */
function noopNsPerSearch(): number {
  const iterations = 2_000_000;
  let sink = 0;
  const run = () => {
    for (let i = 0; i < iterations; i++) {
      if (tracingEnabled()) sink++;
      const span = startSpan('memorypool.retrieval', { 'memorypool.retrieval.units': i });
      if (span.recording) sink++;
      if (span.recording) sink++;
      span.end();
      sink += randomUUID().length;
    }
  };
  run();
  const started = process.cpuUsage();
  run();
  const used = process.cpuUsage(started);
  if (sink === 0) throw new Error('unreachable');
  return ((used.user + used.system) * 1000) / iterations;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

async function search(target: Target, body: string): Promise<void> {
  const answer = await target.client.post('/search', body, 30_000);
  if (answer.status !== 200) throw new Error(`${target.name}: Search answered ${answer.status}: ${answer.text}`);
}

async function waitHealthy(url: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} not healthy within 120 s`);
}

main().catch((error: unknown) => {
  process.stderr.write(`tracing-cost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
