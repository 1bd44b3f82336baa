/**
 * The Add phase of the bench and the bare encoder it is compared with (bench/README.md, "Add"):
 * shared by `run-bench.ts` and the Add-only `add-bench.ts`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Embedder } from '../src/embedding/embedder.js';
import { denseText, splitIntoUnits } from '../src/ingest/message-units.js';
import { cpuMsPer, cpuText } from './cpu-figures.js';
import { checkAdd, metricValue, round, runLoad, type Answer, type LoopbackClient } from './http-load.js';
import { serverEncoderThreads } from './server-encoder.js';
import { startCpuWatch, type CpuShare, type ServerProcess } from './server-process.js';
import { strided, type AddBody } from './workload.js';

/** Concurrent Add clients, as the evaluation platform runs them. */
export const ADD_CLIENTS = 64;
/** Adds sent at once before the figure (encoderCopiesUp): ~12 runs of texts, a backlog that starts the server's encoder copies. */
const WARM_UP_BURST = 32;

type Log = (message: string) => void;

interface EncoderRate {
  messages: number;
  texts: number;
  seconds: number;
  messages_per_s: number;
  texts_per_s: number;
  /** CPU the bench process spent per message: unlike messages/s, barely moved by neighbours taking cores. */
  cpu_ms_per_message: number;
  cpu: CpuShare;
}

export interface EncoderRun {
  /** All texts in one call: the encoder sorts them by length and runs batches of 64 (its best case). */
  all_at_once: EncoderRate;
  /** One call per Add's 20 messages, the way the service calls it. */
  per_add_call: EncoderRate;
}

/** The texts the service embeds for an Add (its units in "Speaker: text" form). */
function addTexts(body: AddBody): string[] {
  return body.messages.flatMap((message) => splitIntoUnits(message.content).map((text) => denseText({ text, role: message.role.trim(), timeMs: message.timestamp })));
}

export async function measureEncoder(embedder: Embedder, bodies: readonly AddBody[], perAddBodies: number, progress: Log): Promise<EncoderRun> {
  // Every copy of a pool, as a server has them a moment after its start.
  await (embedder.loadedAll?.() ?? embedder.ready());
  // Warm-up on the longest texts too: the first run of each larger shape allocates, and that is not the figure.
  const byLength = bodies.flatMap(addTexts).sort((a, b) => b.length - a.length);
  await embedder.embed([...byLength.slice(0, 64), ...byLength.slice(-64)]);
  const timed = async (subset: readonly AddBody[], run: (texts: string[][]) => Promise<unknown>): Promise<EncoderRate> => {
    const texts = subset.map(addTexts);
    const messages = subset.reduce((sum, body) => sum + body.messages.length, 0);
    const count = texts.reduce((sum, list) => sum + list.length, 0);
    const cpu = process.cpuUsage();
    const watch = startCpuWatch(null);
    const started = performance.now();
    await run(texts);
    const seconds = (performance.now() - started) / 1000;
    const cpuUsed = process.cpuUsage(cpu);
    const share = watch();
    return {
      messages,
      texts: count,
      seconds: round(seconds, 2),
      messages_per_s: round(messages / seconds, 1),
      texts_per_s: round(count / seconds, 1),
      cpu_ms_per_message: round((cpuUsed.user + cpuUsed.system) / 1000 / messages, 2),
      cpu: share,
    };
  };
  progress(`bare encoder (in-process, as the server runs it): ${bodies.length} Adds' texts at once, then ${perAddBodies} Adds one call each`);
  const allAtOnce = await timed(bodies, (texts) => embedder.embed(texts.flat()));
  const perAddCall = await timed(strided(bodies, perAddBodies), async (texts) => {
    for (const list of texts) await embedder.embed(list);
  });
  progress(`bare encoder: ${allAtOnce.messages_per_s} messages/s all at once, ${perAddCall.messages_per_s} one Add per call (cores: bench ${allAtOnce.cpu.bench_cores}, others ${allAtOnce.cpu.other_cores}; load ${allAtOnce.cpu.load_avg_1m})`);
  return { all_at_once: allAtOnce, per_add_call: perAddCall };
}

export function summarizeEncoder(before: EncoderRun, after: EncoderRun) {
  const runs = [before, after];
  const mean = (pick: (run: EncoderRun) => number) => round(runs.reduce((sum, run) => sum + pick(run), 0) / runs.length, 1);
  return {
    messages_per_s: mean((run) => run.all_at_once.messages_per_s),
    per_add_call_messages_per_s: mean((run) => run.per_add_call.messages_per_s),
    cpu_ms_per_message: round(runs.reduce((sum, run) => sum + run.all_at_once.cpu_ms_per_message, 0) / runs.length, 2),
    per_add_call_cpu_ms_per_message: round(runs.reduce((sum, run) => sum + run.per_add_call.cpu_ms_per_message, 0) / runs.length, 2),
    note: 'mean of a run before and a run after the Add phase',
    runs,
  };
}

export async function measureAdd(server: ServerProcess, client: LoopbackClient, bodies: readonly AddBody[], progress: Log) {
  // Two Adds first, to a user of their own: the first inference and JIT warm-up are not the figure.
  const warmUp = (body: AddBody, id: string) => client.post('/add', JSON.stringify({ ...body, request_id: `warm-up-${id}`, user_id: 'bench-warm-up' }), 120_000);
  for (const [i, body] of bodies.slice(0, 2).entries()) {
    const problem = checkAdd(await warmUp(body, String(i)));
    if (problem) throw new Error(`warm-up Add failed: ${problem}`);
  }
  const copies = await encoderCopiesUp(server, client, () => Promise.all(strided(bodies, WARM_UP_BURST).map((body, i) => warmUp(body, `burst-${i}`))));
  progress(`Add: ${bodies.length} requests x 20 messages, ${ADD_CLIENTS} clients${copies.ms === null ? '' : `; the server's ${copies.copies} encoder copies were up ${copies.ms} ms after a burst of Adds began`}`);
  const cpu = startCpuWatch(server);
  const threadsBefore = threadCpuSeconds(server.pids());
  let next = 0;
  const load = await runLoad({ client, path: '/add', concurrency: ADD_CLIENTS, nextBody: () => bodies[next++], check: checkAdd, timeoutMs: 300_000 });
  const share = cpu();
  const threads = threadCpuMsPer(threadsBefore, threadCpuSeconds(server.pids()), load.ok * 20, serverEncoderThreads());
  const messagesPerS = round((load.ok * 20) / load.elapsed_s, 1);
  const cpuMsPerMessage = cpuMsPer(share, load.elapsed_s, load.ok * 20);
  progress(`Add: ${messagesPerS} messages/s, p50 ${load.latency_ms.p50} ms, errors ${load.errors} (${cpuText(share)})`);
  progress(`Add: server CPU ms per message by thread: ${JSON.stringify(threads)}`);
  return { load, messages_per_s: messagesPerS, cpu_ms_per_message: cpuMsPerMessage, cpu_ms_per_message_by_thread: threads, cpu: share, rss_mb: server.memory().rss_mb, encoder_copies_up_ms: copies.ms };
}

/**
 * A server starts its encoder copies past the first on a backlog of stored texts (batching-embedder.ts),
 * while the bare encoder it is compared with runs every copy: the figure is taken with the server's
 * copies up too, as ingest that lasts has them. `burst` sends concurrent Adds (a user of their
 * own); then `/metrics`' `memorypool_encoder_copies` is read until it counts the bench's encoder
 * threads. How long that took, from the burst's start, is returned: what a burst of Adds waits
 * for them (null from a server without the gauge, which loads them all at its start).
 */
async function encoderCopiesUp(server: ServerProcess, client: LoopbackClient, burst: () => Promise<Answer[]>): Promise<{ copies: number; ms: number | null }> {
  const wanted = serverEncoderThreads();
  const started = performance.now();
  const sent = burst();
  let ms: number | null = null;
  for (;;) {
    const now = await metricValue(client, 'memorypool_encoder_copies');
    if (now === null) break;
    if (now >= wanted) {
      ms = round(performance.now() - started, 0);
      break;
    }
    if (performance.now() - started > 30_000 || !server.running) throw new Error(`the server's encoder copies stayed at ${now} of ${wanted} after a burst of Adds`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  for (const answer of await sent) {
    const problem = checkAdd(answer);
    if (problem) throw new Error(`warm-up Add failed: ${problem}`);
  }
  return { copies: wanted, ms };
}

/** Linux reports thread CPU time in USER_HZ ticks, 100 a second on every mainstream build. */
const TICKS_PER_SECOND = 100;

/** CPU seconds of each thread of the server's processes (/proc/<pid>/task), by process and thread id, with the thread's name. */
export type ThreadTimes = Map<string, { name: string; main: boolean; seconds: number }>;

export function threadCpuSeconds(pids: readonly number[]): ThreadTimes {
  const threads: ThreadTimes = new Map();
  for (const pid of pids) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
        const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        threads.set(`${pid}/${tid}`, { name, main: tid === String(pid), seconds: (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND });
      } catch {
        // The thread ended meanwhile.
      }
    }
  }
  return threads;
}

/**
 * Where the server's CPU went, per message (or request), by thread: the main threads (HTTP,
 * and scoring and indexes where no service threads run; one per server process, the cluster
 * primary's handing out connections included), the service threads (src/threads/: scoring,
 * indexes, the store's writes), the encoder's threads (the `encoderThreads` busiest workers: one per copy of the
 * model), the libuv pool (file I/O) and the rest (GC, V8).
 */
export function threadCpuMsPer(before: ThreadTimes, after: ThreadTimes, count: number, encoderThreads: number) {
  const used = [...after].map(([id, thread]) => ({ id, name: thread.name, main: thread.main, seconds: thread.seconds - (before.get(id)?.seconds ?? 0) }));
  const main = used.filter((thread) => thread.main);
  const pool = used.filter((thread) => thread.name.startsWith('libuv-worker'));
  // The server names its own threads (src/telemetry/thread-name.ts); a server that does not, the busiest.
  const services = used.filter((thread) => thread.name.startsWith('mp-service'));
  const named = used.filter((thread) => thread.name.startsWith('mp-encoder'));
  const others = used.filter((thread) => !thread.main && !pool.includes(thread) && !services.includes(thread) && !named.includes(thread)).sort((a, b) => b.seconds - a.seconds);
  const encoders = named.length > 0 ? named : others.slice(0, encoderThreads);
  const ms = (seconds: number) => round((seconds * 1000) / Math.max(count, 1), 3);
  const sum = (list: typeof used) => list.reduce((total, thread) => total + thread.seconds, 0);
  return {
    main: ms(sum(main)),
    service_threads: ms(sum(services)),
    encoder: ms(sum(encoders)),
    file_io_pool: ms(sum(pool)),
    other_threads: ms(sum(named.length > 0 ? others : others.slice(encoderThreads))),
  };
}
