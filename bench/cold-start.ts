/**
 * Spawn → first Search answered, with an empty data directory and with 100k memories (five users of
 * 20,000, the scale phase's store: bench/scale-store.ts, index caches and vector sidecars written),
 * servers of each started in turn, `--rounds` times: the scale phase's "cold start with 100k
 * memories ≤ 2× an empty start" (issue 29) with more than the one start a quick run makes, on
 * a shared machine whose single starts move by ±20%.
 *
 *   node dist/bench/cold-start.js [--rounds 5] [--memories 100000] [--store <dir, kept and reused>] [--entry <other build's dist/src/main.js>]
 *
 * As the scale phase does, the Search polls from the spawn on (every 20 ms), each poll the next of
 * the five users, so the first answer is a user loaded by that Search. Each start also gives the
 * ms from the spawn to the server's first answer of any kind (`listening_ms`: a second client polls
 * a route that does not exist, whose 404 costs nothing; `/health` would count every user of a
 * store without `sync/pool-figures.json`, reading each one's file, in the very seconds measured).
 * With `--entry`, a server of that build is started beside each of this build's, on the same
 * stores, in turn. A benchmark: it prints, it never fails.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os, { cpus } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { LoopbackClient, round } from './http-load.js';
import { median } from './interleaved-servers.js';
import { writeScaleStore } from './scale-store.js';
import { ServerProcess, startCpuWatch, waitForFirstAnswer } from './server-process.js';
import { DEFAULT_LOCOMO, loadWorkload } from './workload.js';

const USERS = 5;
const QUESTION = 'What did Caroline say about adoption?';

interface Start {
  first_answer_ms: number;
  listening_ms: number | null;
  server_cpu_s: number;
}

async function start(dataDir: string, entry: string | undefined): Promise<Start> {
  const server = await ServerProcess.start({ dataDir, entry });
  const watch = startCpuWatch(server);
  const client = new LoopbackClient(server.url, 2);
  const probe = new LoopbackClient(server.url, 1);
  let listeningMs: number | null = null;
  let polling = true;
  const listening = (async () => {
    while (polling && listeningMs === null) {
      try {
        await probe.get('/cold-start-probe', 5_000);
        listeningMs = Math.round(performance.now() - server.spawnedAt);
      } catch {
        // Not listening yet.
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  })();
  try {
    let poll = 0;
    const firstMs = await waitForFirstAnswer(server, client, () => ({ query: QUESTION, user_id: `scale-user-${poll++ % USERS}`, top_k: 10 }), 120_000, (answer) => answer.status === 200);
    const share = watch();
    return { first_answer_ms: firstMs, listening_ms: listeningMs, server_cpu_s: round((share.server_cores * firstMs) / 1000, 2) };
  } finally {
    polling = false;
    await listening;
    client.close();
    probe.close();
    if (server.running) await server.stop();
  }
}

function summary(starts: readonly Start[]) {
  return {
    first_answer_ms: starts.map((entry) => entry.first_answer_ms),
    median_ms: median(starts.map((entry) => entry.first_answer_ms)),
    listening_ms: starts.map((entry) => entry.listening_ms),
    server_cpu_s: starts.map((entry) => entry.server_cpu_s),
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: 'string', default: '5' },
      memories: { type: 'string', default: '100000' },
      store: { type: 'string' },
      entry: { type: 'string' },
      locomo: { type: 'string', default: DEFAULT_LOCOMO },
    },
  });
  const rounds = Number(values.rounds);
  const memories = Number(values.memories);
  const work = await mkdtemp(path.join(os.tmpdir(), 'memorypool-cold-start-'));
  try {
    const empty = path.join(work, 'empty');
    const full = values.store ?? path.join(work, 'full');
    if (!existsSync(path.join(full, 'users'))) {
      const workload = await loadWorkload(values.locomo!);
      await writeScaleStore({ dataDir: full, memories, users: USERS, texts: workload.conversations.flatMap((conversation) => conversation.turns), seed: memories });
    }
    const builds: Array<{ name: string; entry: string | undefined }> = [{ name: 'this', entry: undefined }];
    if (values.entry !== undefined) builds.push({ name: path.resolve(values.entry), entry: path.resolve(values.entry) });
    const starts = new Map(builds.map((build) => [build.name, { empty: [] as Start[], full: [] as Start[] }]));
    for (let round_ = 0; round_ < rounds; round_++) {
      for (const build of round_ % 2 === 0 ? builds : [...builds].reverse()) {
        const mine = starts.get(build.name)!;
        mine.empty.push(await start(empty, build.entry));
        mine.full.push(await start(full, build.entry));
        process.stderr.write(`round ${round_ + 1} ${build.name}: empty ${mine.empty.at(-1)!.first_answer_ms} ms, ${memories} memories ${mine.full.at(-1)!.first_answer_ms} ms\n`);
      }
    }
    const result = {
      cpu: cpus()[0]?.model ?? 'unknown',
      node: process.version,
      memories,
      users: USERS,
      rounds,
      builds: builds.map((build) => {
        const mine = starts.get(build.name)!;
        const emptyMs = median(mine.empty.map((entry) => entry.first_answer_ms));
        const fullMs = median(mine.full.map((entry) => entry.first_answer_ms));
        return { build: build.name, empty: summary(mine.empty), full: summary(mine.full), ratio_of_medians: round(fullMs / emptyMs, 2), target: '≤ 2' };
      }),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

await main();
