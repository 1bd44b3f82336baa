import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { threadCpuMsPer, threadCpuSeconds } from './add-phase.js';
import { checkAdd, checkSearch, LoopbackClient, round, runLoad } from './http-load.js';
import { ServerProcess, waitForFirstAnswer } from './server-process.js';

/**
 * The service threads against the service on the main thread (MEMORYPOOL_THREADS, issue 29 item
 * 1), interleaved in one run so that the machine's drift falls on both alike:
 *
 *   node dist/bench/service-threads.js [--threads 2] [--memories 2000,300] [--clients 32] [--seconds 5] [--rounds 2]
 *
 * For each size, each round starts a server with 0 threads and one with `--threads` (the ONNX
 * encoder, a fresh data directory), adds two users of that many memories, and runs POST /search
 * (top_k 100, a new query text each time, so that every query is encoded) at `--clients` for
 * `--seconds`; prints req/s, the server's cores, its CPU per Search by thread and single-client
 * p50, and the ratios threads / none.
 */

const WORDS = ['dog', 'garden', 'trip', 'book', 'music', 'painting', 'adoption', 'camping', 'school', 'friend', 'beach', 'concert', 'recipe', 'soccer', 'museum'];
const USERS = ['bench-a', 'bench-b'];
const MESSAGES_PER_ADD = 100;

interface Figures {
  req_s: number;
  cores: number;
  cpu_ms_by_thread: ReturnType<typeof threadCpuMsPer>;
  single_client_p50_ms: number;
}

async function measure(threads: number, memories: number, clients: number, seconds: number): Promise<Figures> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-bench-threads-'));
  const server = await ServerProcess.start({ dataDir, env: { MEMORYPOOL_THREADS: String(threads) } });
  try {
    const client = new LoopbackClient(server.url, clients * 2);
    await waitForFirstAnswer(server, client, () => ({ query: 'hello', user_id: USERS[0], top_k: 1 }), 60_000, (answer) => answer.status === 200);
    for (const userId of USERS) {
      for (let session = 0; session * MESSAGES_PER_ADD < memories; session++) {
        const messages = Array.from({ length: MESSAGES_PER_ADD }, (_, i) => ({
          role: i % 2 ? 'Melanie' : 'Caroline',
          content: `I went to the ${WORDS[(i * 7 + session) % 15]} with my ${WORDS[(i * 3 + session) % 15]} friend and we talked about the ${WORDS[(i + session * 5) % 15]} for hours`,
          timestamp: 1683554160000 + (session * MESSAGES_PER_ADD + i) * 60_000,
        }));
        const answer = await client.post('/add', JSON.stringify({ request_id: `${userId}-${session}`, user_id: userId, session_id: `s${session}`, messages }), 120_000);
        const problem = checkAdd(answer);
        if (problem) throw new Error(`add: ${problem}`);
      }
    }
    let q = 0;
    const nextBody = () => {
      const n = q++;
      return { query: `What did Caroline say about the ${WORDS[n % 15]} and the ${WORDS[(n * 4) % 15]}? (${n})`, user_id: USERS[n % 2], top_k: 100 };
    };
    await runLoad({ client, path: '/search', concurrency: clients, nextBody, check: checkSearch, durationMs: 2_000, timeoutMs: 60_000 });
    const single = await runLoad({ client, path: '/search', concurrency: 1, nextBody, check: checkSearch, durationMs: 2_000, timeoutMs: 60_000 });
    const before = threadCpuSeconds([server.pid]);
    const loaded = await runLoad({ client, path: '/search', concurrency: clients, nextBody, check: checkSearch, durationMs: seconds * 1000, timeoutMs: 60_000 });
    const after = threadCpuSeconds([server.pid]);
    const used = [...after].reduce((sum, [id, thread]) => sum + thread.seconds - (before.get(id)?.seconds ?? 0), 0);
    if (loaded.errors > 0) throw new Error(`search errors: ${JSON.stringify(loaded.error_kinds)}`);
    return {
      req_s: loaded.per_s,
      cores: round(used / loaded.elapsed_s, 2),
      cpu_ms_by_thread: threadCpuMsPer(before, after, loaded.ok, 0),
      single_client_p50_ms: single.latency_ms.p50,
    };
  } finally {
    await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      threads: { type: 'string', default: '2' },
      memories: { type: 'string', default: '2000,300' },
      clients: { type: 'string', default: '32' },
      seconds: { type: 'string', default: '5' },
      rounds: { type: 'string', default: '2' },
    },
  });
  const threads = Number(values.threads);
  const clients = Number(values.clients);
  const seconds = Number(values.seconds);
  const out: unknown[] = [];
  for (const memories of values.memories.split(',').map(Number)) {
    const none: Figures[] = [];
    const withThreads: Figures[] = [];
    for (let round = 0; round < Number(values.rounds); round++) {
      none.push(await measure(0, memories, clients, seconds));
      withThreads.push(await measure(threads, memories, clients, seconds));
      process.stderr.write(`[service-threads] ${memories} memories a user, round ${round + 1}: none ${none.at(-1)!.req_s} req/s (${none.at(-1)!.cores} cores), ${threads} threads ${withThreads.at(-1)!.req_s} req/s (${withThreads.at(-1)!.cores} cores)\n`);
    }
    const mean = (list: Figures[], pick: (figures: Figures) => number) => list.reduce((sum, figures) => sum + pick(figures), 0) / list.length;
    out.push({
      memories_per_user: memories,
      clients,
      none,
      threads: { count: threads, runs: withThreads },
      req_s_ratio: round(mean(withThreads, (f) => f.req_s) / mean(none, (f) => f.req_s), 3),
      cores: { none: round(mean(none, (f) => f.cores), 2), threads: round(mean(withThreads, (f) => f.cores), 2) },
      single_client_p50_ratio: round(mean(withThreads, (f) => f.single_client_p50_ms) / mean(none, (f) => f.single_client_p50_ms), 3),
    });
  }
  process.stdout.write(JSON.stringify({ cpu: os.cpus()[0]?.model, cores: os.availableParallelism(), results: out }, null, 2) + '\n');
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
});
