/**
 * Fairness under hostile load: ordinary Searches' latency while one client keeps a hostile
 * request in flight (issue 12: a 7 MB query, 5,000 options, a 1 MB message Add; before the
 * bounds, an ordinary Search sent 3 s after the 7 MB query waited 21 s behind it).
 *
 *   node dist/bench/hostile-load.js [--quick] [--locomo <file>] [--clients 4] [--seconds 6]
 *
 * (also a phase of `npm run bench`). For each hostile kind, `clients` closed-loop clients send
 * ordinary Searches for a window while one more client sends the hostile request back to back,
 * so one is always in flight; their p95 is compared with the same load's p95 with nothing
 * hostile, measured just before (the machine is shared: a baseline taken once drifts). The largest requests the limits still accept are measured the same way.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { MAX_ADD_CHARS, MAX_MESSAGE_CHARS, MAX_SEARCH_BODY_BYTES, MAX_SEARCH_OPTIONS } from '../src/protocol/request-limits.js';
import { MAX_QUERY_CHARS } from '../src/memory/query-bounds.js';
import { checkAdd, checkSearch, latencyStats, LoopbackClient, round, runLoad, type Answer, type LatencyStats } from './http-load.js';
import { serveLongestConversation } from './longest-user-server.js';
import { ServerProcess, startCpuWatch, type CpuShare } from './server-process.js';
import { DEFAULT_LOCOMO, loadWorkload } from './workload.js';

const MB = 1024 * 1024;

export interface HostileLoadOptions {
  /** Users with memories that the ordinary Searches ask. */
  userIds: string[];
  /** Ordinary questions, cycled over the users. */
  questions: string[];
  /** Ordinary closed-loop Search clients. */
  clients: number;
  /** Length of each measured window (ms). */
  windowMs: number;
  topK: number;
  log?: (line: string) => void;
}

interface HostileKind {
  id: string;
  description: string;
  path: '/search' | '/add';
  /** A new body per request (Adds need fresh request ids, or they would be no-op repeats). */
  body: (n: number) => string;
  /** What the bounds answer it with. */
  expected: number;
  /** Part of the issue's target row (the requests it names), or the largest accepted, for information. */
  target: boolean;
}

export interface HostileWindow {
  id: string;
  description: string;
  hostile: { requests: number; statuses: Record<string, number>; latency_ms: LatencyStats; expected_status: number };
  normal: { requests: number; errors: number; error_kinds: Record<string, number>; per_s: number; latency_ms: LatencyStats };
  /** The same ordinary load just before, with nothing hostile: the machine is shared, so each window has its own baseline. */
  idle: HostileWindow['normal'];
  /** Ordinary p95 during the window over the idle p95 just before it. */
  p95_ratio_to_idle: number;
  /** One of the issue's three hostile requests (else the largest accepted, for information). */
  target: boolean;
  cpu: CpuShare;
}

export interface HostileLoadResult {
  clients: number;
  window_s: number;
  windows: HostileWindow[];
  /** The worst p95 ratio over the issue's three hostile requests: the target row's figure. */
  worst_target_ratio: number;
  worst_target_id: string;
}

/** `words` repeated to `chars` characters. */
function filler(words: string, chars: number): string {
  return words.repeat(Math.ceil(chars / words.length)).slice(0, chars);
}

/** The hostile client's own user: fair scheduling may keep one user's flood from others, so it is not an ordinary user. */
const HOSTILE_USER = 'bench-hostile-mallory';

function hostileKinds(question: string, topK: number): HostileKind[] {
  const prose = 'Caroline said the support group met again on Tuesday and they talked about adoption, painting and the beach. ';
  // Serialised once: the bench's own CPU (a 7 MB JSON.stringify per request) would otherwise compete with the server's.
  const search = (body: object) => {
    const text = JSON.stringify({ user_id: HOSTILE_USER, top_k: topK, ...body });
    return () => text;
  };
  const add = (messages: string[]) => {
    const template = JSON.stringify({ request_id: 'REQUEST-ID', user_id: HOSTILE_USER, session_id: 'hostile', messages: messages.map((content) => ({ role: 'Mallory', content })) });
    const run = Math.random().toString(36).slice(2);
    return (n: number) => template.replace('REQUEST-ID', `hostile-${run}-${n}`);
  };
  const sevenMbQuery = filler(`${question} ${prose}`, 7 * MB);
  const oneMbMessage = filler(prose, MB);
  const largestQuery = filler(`${question} ${prose}`, MAX_SEARCH_BODY_BYTES - 1_000);
  const maxMessage = filler(prose, MAX_MESSAGE_CHARS);
  return [
    { id: 'search_7mb_query', description: 'Search with a 7 MB query', path: '/search', body: search({ query: sevenMbQuery }), expected: 413, target: true },
    { id: 'search_5000_options', description: 'Search with 5,000 options', path: '/search', body: search({ query: question, options: Array.from({ length: 5_000 }, (_, i) => `${question} (${i})`) }), expected: 422, target: true },
    { id: 'add_1mb_message', description: 'Add of one 1 MB message', path: '/add', body: add([oneMbMessage]), expected: 422, target: true },
    {
      id: 'search_largest_body',
      description: `Search with a query of ${(largestQuery.length / MB).toFixed(2)} MB (the largest Search body accepted; read to ${MAX_QUERY_CHARS} characters)`,
      path: '/search',
      body: search({ query: largestQuery }),
      expected: 200,
      target: false,
    },
    {
      id: 'search_query_at_bound',
      description: `Search with a query of ${MAX_QUERY_CHARS} characters (all of it read; the encoder's full 128 tokens)`,
      path: '/search',
      body: search({ query: filler(`${question} ${prose}`, MAX_QUERY_CHARS) }),
      expected: 200,
      target: false,
    },
    {
      id: 'search_largest_accepted',
      description: `Search with ${MAX_SEARCH_OPTIONS} options of ${MAX_QUERY_CHARS} characters (the most a Search reads)`,
      path: '/search',
      body: search({ query: question, options: Array.from({ length: MAX_SEARCH_OPTIONS }, (_, i) => filler(`${i} ${prose}`, MAX_QUERY_CHARS)) }),
      expected: 200,
      target: false,
    },
    {
      id: 'add_largest_accepted',
      description: `Add of ${MAX_ADD_CHARS / MAX_MESSAGE_CHARS} messages of ${MAX_MESSAGE_CHARS} characters (the largest Add accepted)`,
      path: '/add',
      body: add(Array.from({ length: MAX_ADD_CHARS / MAX_MESSAGE_CHARS }, () => maxMessage)),
      expected: 200,
      target: false,
    },
  ];
}

export async function measureHostileLoad(server: ServerProcess, options: HostileLoadOptions): Promise<HostileLoadResult> {
  const log = options.log ?? (() => undefined);
  const normalClient = new LoopbackClient(server.url, options.clients);
  const hostileClient = new LoopbackClient(server.url, 1);
  let cursor = 0;
  const nextSearch = () => {
    const i = cursor++;
    return { query: options.questions[i % options.questions.length], user_id: options.userIds[i % options.userIds.length], top_k: options.topK };
  };
  const normalLoad = async () => {
    const result = await runLoad({ client: normalClient, path: '/search', concurrency: options.clients, nextBody: nextSearch, check: checkSearch, durationMs: options.windowMs, timeoutMs: 120_000 });
    return { requests: result.requests, errors: result.errors, error_kinds: result.error_kinds, per_s: result.per_s, latency_ms: result.latency_ms };
  };

  try {
    // The hostile user has memories, so its searches do the full work (a user without any is answered at once).
    const seed = { request_id: 'hostile-seed', user_id: HOSTILE_USER, session_id: 'seed', messages: options.questions.slice(0, 20).map((content) => ({ role: 'Mallory', content })) };
    const seeded = await hostileClient.post('/add', JSON.stringify(seed), 120_000);
    if (checkAdd(seeded) !== null) throw new Error(`could not seed the hostile user: ${seeded.status} ${seeded.text.slice(0, 200)}`);
    // Warm-up (connections, code paths), not a figure.
    await runLoad({ client: normalClient, path: '/search', concurrency: options.clients, nextBody: nextSearch, check: checkSearch, durationMs: 1_000, timeoutMs: 60_000 });
    const windows: HostileWindow[] = [];
    for (const kind of hostileKinds(options.questions[0], options.topK)) {
      const idle = await normalLoad();
      const bodies = { next: 0 };
      const answers: Answer[] = [];
      const statuses: Record<string, number> = {};
      let stop = false;
      const hostileLoop = (async () => {
        while (!stop) {
          const n = bodies.next++;
          try {
            const answer = await hostileClient.post(kind.path, kind.body(n), 300_000);
            answers.push(answer);
            statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
            const check = kind.path === '/add' ? checkAdd : checkSearch;
            if (answer.status === 200 && check(answer) !== null) statuses.invalid_body = (statuses.invalid_body ?? 0) + 1;
          } catch (error) {
            const key = `network_${(error as NodeJS.ErrnoException).code ?? 'error'}`;
            statuses[key] = (statuses[key] ?? 0) + 1;
          }
        }
      })();
      // Let the hostile request reach the server first: the ordinary ones arrive while it is in flight.
      await new Promise((resolve) => setTimeout(resolve, 100));
      const cpu = startCpuWatch(server);
      const normal = await normalLoad();
      const share = cpu();
      stop = true;
      await hostileLoop;
      const window: HostileWindow = {
        id: kind.id,
        description: kind.description,
        hostile: { requests: bodies.next, statuses, latency_ms: latencyStats(answers.map((answer) => answer.ms)), expected_status: kind.expected },
        normal,
        idle,
        p95_ratio_to_idle: round(normal.latency_ms.p95 / idle.latency_ms.p95, 2),
        target: kind.target,
        cpu: share,
      };
      windows.push(window);
      log(`hostile: ${kind.description}: ${bodies.next} sent (${Object.entries(statuses).map(([status, count]) => `${count}x ${status}`).join(', ')}, p50 ${window.hostile.latency_ms.p50} ms); ordinary p95 ${normal.latency_ms.p95} ms = ${window.p95_ratio_to_idle}x idle (${idle.latency_ms.p95} ms just before), errors ${normal.errors}`);
    }
    const worst = windows.filter((window) => window.target).reduce((a, b) => (b.p95_ratio_to_idle > a.p95_ratio_to_idle ? b : a));
    return {
      clients: options.clients,
      window_s: options.windowMs / 1000,
      windows,
      worst_target_ratio: worst.p95_ratio_to_idle,
      worst_target_id: worst.id,
    };
  } finally {
    normalClient.close();
    hostileClient.close();
  }
}

// ---------------------------------------------------------------------------------------------
// On its own: a server, one LoCoMo conversation as the searched user, the phase, a JSON summary.


async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      locomo: { type: 'string' },
      clients: { type: 'string', default: '4' },
      seconds: { type: 'string' },
    },
  });
  const started = performance.now();
  const log = (line: string) => process.stderr.write(`[hostile ${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${line}\n`);
  const workload = await loadWorkload(values.locomo ?? DEFAULT_LOCOMO);
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-hostile-'));
  const loadAtStart = os.loadavg()[0];
  try {
    const { server, userId, conversation } = await serveLongestConversation(workDir, workload, 'bench-hostile', log);
    const result = await measureHostileLoad(server, {
      userIds: [userId],
      questions: conversation.questions.length > 0 ? conversation.questions : workload.conversations.flatMap((entry) => entry.questions),
      clients: Number(values.clients),
      windowMs: Number(values.seconds ?? (values.quick ? 4 : 10)) * 1000,
      topK: 100,
      log,
    });
    const stop = await server.stop();
    const summary = {
      bench: 'memorypool-hostile-load',
      command: `node dist/bench/hostile-load.js${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}`,
      texts: workload.source,
      memories: conversation.turns.length,
      load_avg: { at_start: round(loadAtStart, 2), at_end: round(os.loadavg()[0], 2) },
      target: { wanted: 'ordinary Search p95 while one hostile request is in flight < 2x idle p95', worst_ratio: result.worst_target_ratio, worst: result.worst_target_id, result: result.worst_target_ratio < 2 ? 'pass' : 'miss' },
      ...result,
      server_exit: stop,
      server_log: server.logLines.slice(0, 20),
    };
    process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  } finally {
    await ServerProcess.stopAll();
    await rm(workDir, { recursive: true, force: true });
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((error: Error) => {
    process.stderr.write(`hostile-load: ${error.stack ?? error.message}\n`);
    process.exitCode = 1;
  });
}
