#!/usr/bin/env node
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadavg, cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { randomUUID } from 'node:crypto';
import { startSpan, tracingEnabled } from '../src/telemetry/tracing.js';
import { measureRounds, median, roundRatio, seedSearchData, startVariants, variantRounds, type MeasuredServer, type Variant } from './interleaved-servers.js';
import { ServerProcess } from './server-process.js';
import { DEFAULT_LOCOMO } from './workload.js';

/**
 * `node dist/bench/tracing-cost.js [--base <checkout>] [--trials 4] [--rounds 10] [--searches 150] [--processes 2] [--block 10]`:
 * what tracing costs a cached Search (issue 28, item 4), in one run. Real servers
 * (`dist/src/main.js`) serve copies of one data directory (LoCoMo's two longest conversations,
 * ~690 memories each, stored with the real encoder), `--processes` of each variant:
 * - `base`: the build of `--base`, a checkout of the code before tracing, built (`npm run build`);
 * - `off`: this build, no OTLP endpoint (the no-op path);
 * - `control`: the same as `off` again, so that `control_over_off` shows what two sets of
 *   servers of one build differ by: the resolution of every other ratio of the run;
 * - `on`: this build exporting every span (OTEL_TRACES_SAMPLER=always_on, OTLP protobuf) to a
 *   receiver in this process that counts them and drops them;
 * - `sampled`: the same with one trace in ten sampled (OTEL_TRACES_SAMPLER=traceidratio, 0.1).
 * Every question is searched once on each server first, so its query vector is cached; then
 * rounds of `searches` Searches a server, one at a time over a keep-alive connection, sent in
 * blocks of `--block` that go round all the servers (interleaved-servers.ts), so that every
 * server of a round is measured over the same seconds, each server's CPU over a round read from
 * schedstat (every thread). A variant's figure for a round is its processes' CPU over their
 * Searches; a ratio is taken round by round, and the median (with quartiles) is over the rounds
 * of every trial, each trial's own median printed beside it. `--trials` runs the whole again on
 * new processes: a server process keeps its cost per Search for its life (within 5-10% of a
 * sibling of the same build, which two processes a variant do not average out), so the figure
 * needs many processes more than many rounds. Targets: off/base ≤ 1.01, on/off ≤ 1.10. A
 * benchmark: it prints, it never fails.
 */

type Name = 'base' | 'off' | 'control' | 'on' | 'sampled';

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
    options: {
      base: { type: 'string' },
      trials: { type: 'string', default: '4' },
      rounds: { type: 'string', default: '10' },
      searches: { type: 'string', default: '150' },
      processes: { type: 'string', default: '2' },
      block: { type: 'string', default: '10' },
      locomo: { type: 'string', default: DEFAULT_LOCOMO },
    },
  });
  const trials = Number(values.trials);
  const rounds = Number(values.rounds);
  const perRound = Number(values.searches);
  const processes = Number(values.processes);
  const block = Number(values.block);
  const work = await mkdtemp(path.join(tmpdir(), 'memorypool-tracing-cost-'));
  const receiver = await startReceiver();
  try {
    const { seedDir, questions } = await seedSearchData(work, values.locomo!);
    const traced = {
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_TRACES_SAMPLER: 'always_on',
    };
    const plan: Array<Variant & { name: Name }> = [
      ...(values.base === undefined ? [] : [{ name: 'base' as const, entry: path.resolve(values.base, 'dist/src/main.js') }]),
      { name: 'off' },
      // The same as `off`: what two sets of servers of one build differ by, the resolution of the ratios below.
      { name: 'control' },
      { name: 'on', env: traced },
      // One trace in ten: what the context machinery costs the other nine, beside the exported one.
      { name: 'sampled', env: { ...traced, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' } },
    ];
    const names = plan.map((variant) => variant.name);
    // Every trial starts its own processes: a process keeps its cost for life (its heap's
    // collections, where it runs), so the processes, not the rounds, are what must be many.
    const measured: MeasuredServer[][] = [];
    let searchSpansBeforeStop = 0;
    for (let trial = 0; trial < trials; trial++) {
      const trialWork = path.join(work, `trial-${trial}`);
      await mkdir(trialWork);
      const servers = await startVariants(trialWork, seedDir, plan, processes);
      await measureRounds(servers, questions, { rounds, perRound, block });
      // The spans still buffered (the batch processor's delay) are exported when it stops.
      searchSpansBeforeStop = receiver.searchSpans();
      for (const server of servers) {
        server.client.close();
        await server.server.stop();
      }
      measured.push(servers);
      await rm(trialWork, { recursive: true, force: true });
    }
    const on = measured.flat().filter((server) => server.variant === 'on');
    const pooled = (variant: Name): number[] => measured.flatMap((servers) => variantRounds(servers, variant) ?? []);
    const usPerSearch = Object.fromEntries(names.map((name) => [name, +(median(pooled(name)) / 1000).toFixed(1)])) as Record<Name, number>;
    const perProcess = Object.fromEntries(names.map((name) => [name, measured.flat().filter((server) => server.variant === name).map((server) => +(median(server.rounds) / 1000).toFixed(1))]));
    const ratio = (a: Name, b: Name) => {
      const perTrial = measured.map((servers) => roundRatio(servers, a, b));
      if (perTrial.some((figure) => figure === undefined)) return undefined;
      const rounds = measured.flatMap((servers) => {
        const top = variantRounds(servers, a)!;
        const bottom = variantRounds(servers, b)!;
        return top.map((value, i) => value / bottom[i]);
      });
      const sorted = [...rounds].sort((x, y) => x - y);
      return {
        median: +median(sorted).toFixed(4),
        quartiles: [+sorted[Math.floor(sorted.length / 4)].toFixed(4), +sorted[Math.floor((sorted.length * 3) / 4)].toFixed(4)],
        each_trial: perTrial.map((figure) => figure!.median),
      };
    };
    const offOverBase = ratio('off', 'base');
    const controlOverOff = ratio('control', 'off');
    const onOverOff = ratio('on', 'off');
    const sampledOverOff = ratio('sampled', 'off');
    const sentToOn = on.reduce((sum, server) => sum + server.searches, 0) + on.length * (questions.length + perRound);
    const result = {
      cpu: cpus()[0]?.model ?? 'unknown',
      cores: cpus().length,
      memories: 'LoCoMo: the two longest conversations',
      node: process.version,
      trials,
      processes_per_variant_per_trial: processes,
      rounds_per_trial: rounds,
      searches_per_round: perRound,
      block,
      cpu_us_per_search_median: usPerSearch,
      cpu_us_per_search_each_process: perProcess,
      off_over_base: offOverBase,
      control_over_off: controlOverOff,
      noop_path_ns_per_search: +noopNsPerSearch().toFixed(0),
      noop_path_share_of_a_search: +(noopNsPerSearch() / 1000 / (usPerSearch.base ?? usPerSearch.off)).toFixed(5),
      on_over_off: onOverOff,
      sampled_10pct_over_off: sampledOverOff,
      search_spans_exported: receiver.searchSpans(),
      search_spans_exported_by_the_last_trial_before_stop: searchSpansBeforeStop,
      // Warm-up Searches included; the sampled servers' tenth of their traces are exported too.
      searches_sent_to_on: sentToOn,
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

main().catch((error: unknown) => {
  process.stderr.write(`tracing-cost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
