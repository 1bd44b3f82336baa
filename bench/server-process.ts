import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { round, type LoopbackClient } from './http-load.js';
import { benchPrecision, benchProcesses, benchThreads } from './server-encoder.js';

/**
 * The real server as users run it (`node dist/src/main.js`), on a loopback port and a data
 * directory of the bench's own, plus what /proc says about it and about the machine.
 */

/** dist/bench/server-process.js → dist/src/main.js */
export const SERVER_ENTRY = fileURLToPath(new URL('../src/main.js', import.meta.url));

export interface ServerOptions {
  dataDir: string;
  /** Extra node flags for the server (e.g. `--cpu-prof`). */
  nodeArgs?: string[];
  /** Extra settings (e.g. `MEMORYPOOL_DATABASE_URL`), over the bench's own. */
  env?: Record<string, string>;
  /** Another build's server (its dist/src/main.js), for a bench that compares builds; this build's by default. */
  entry?: string;
}

/** Servers not yet exited, so that a failing or interrupted bench leaves none behind. */
const live = new Set<ServerProcess>();

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class ServerProcess {
  readonly url: string;
  readonly pid: number;
  /** performance.now() just before spawn: cold start counts from here. */
  readonly spawnedAt: number;
  /** The server's log lines (warn and above), kept for the report. */
  readonly logLines: string[] = [];
  readonly exited: Promise<ExitInfo>;
  private readonly child: ChildProcess;
  private exitInfo: ExitInfo | null = null;

  private constructor(child: ChildProcess, url: string, spawnedAt: number) {
    this.child = child;
    this.url = url;
    this.spawnedAt = spawnedAt;
    if (child.pid === undefined) throw new Error(`could not start ${SERVER_ENTRY}`);
    this.pid = child.pid;
    live.add(this);
    this.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        live.delete(this);
        this.exitInfo = { code, signal };
        resolve(this.exitInfo);
      });
    });
    let pending = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) if (line.trim() !== '' && this.logLines.length < 200) this.logLines.push(line);
    });
  }

  static async start(options: ServerOptions): Promise<ServerProcess> {
    const entry = options.entry ?? SERVER_ENTRY;
    if (!existsSync(entry)) throw new Error(`${entry} is missing: run \`npm run build\` first`);
    const port = await freePort();
    const env: NodeJS.ProcessEnv = {};
    // The bench's own settings only: a MEMORYPOOL_TOKEN in the caller's shell would turn every request into a 401.
    for (const [name, value] of Object.entries(process.env)) if (!name.startsWith('MEMORYPOOL_')) env[name] = value;
    Object.assign(env, {
      MEMORYPOOL_DATA_DIR: options.dataDir,
      MEMORYPOOL_PORT: String(port),
      MEMORYPOOL_HOST: '127.0.0.1',
      MEMORYPOOL_LOG_LEVEL: 'warn',
      MEMORYPOOL_MODEL_PRECISION: benchPrecision(),
      MEMORYPOOL_PROCESSES: String(benchProcesses()),
      MEMORYPOOL_THREADS: String(benchThreads()),
      ...options.env,
    });
    const spawnedAt = performance.now();
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), entry], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    return new ServerProcess(child, `http://127.0.0.1:${port}`, spawnedAt);
  }

  get running(): boolean {
    return this.exitInfo === null;
  }

  /** The server's process and its children: the server processes under MEMORYPOOL_PROCESSES > 1. */
  pids(): number[] {
    return processTree(this.pid);
  }

  /**
   * Resident and peak resident memory, from /proc/<pid>/status, summed over the server's
   * processes (the peak summed is an upper bound: the processes need not peak together).
   */
  memory(): { rss_mb: number; peak_rss_mb: number; rss_bytes: number } {
    let rss = 0;
    let peak = 0;
    for (const pid of this.pids()) {
      let status = '';
      try {
        status = readFileSync(`/proc/${pid}/status`, 'utf8');
      } catch {
        continue; // ended meanwhile
      }
      const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+)\\s+kB`, 'm').exec(status)?.[1] ?? NaN);
      rss += kb('VmRSS');
      peak += kb('VmHWM');
    }
    return { rss_mb: round(rss / 1024, 1), peak_rss_mb: round(peak / 1024, 1), rss_bytes: rss * 1024 };
  }

  /** CPU time the server used so far (all its processes and threads, the encoder's included), in seconds. */
  cpuSeconds(): number {
    return this.pids().reduce((total, pid) => total + processCpuSeconds(pid), 0);
  }

  /** Stops every server still running (on a failure or an interrupt of the bench). */
  static async stopAll(timeoutMs = 10_000): Promise<void> {
    await Promise.all([...live].map((server) => server.stop(timeoutMs)));
  }

  /** SIGTERM (the server drains and exits 0); SIGKILL if it has not exited within `timeoutMs`. */
  async stop(timeoutMs = 60_000): Promise<ExitInfo & { stop_ms: number }> {
    const started = performance.now();
    if (this.running) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
      await this.exited;
      clearTimeout(timer);
    }
    const info = await this.exited;
    return { ...info, stop_ms: Math.round(performance.now() - started) };
  }
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Linux reports process and machine CPU time in USER_HZ ticks, 100 a second on every mainstream build. */
const TICKS_PER_SECOND = 100;

/** A process and its descendants, from /proc/<pid>/task/<tid>/children; ones that ended meanwhile are left out. */
export function processTree(pid: number): number[] {
  const pids = [pid];
  for (let i = 0; i < pids.length; i++) {
    let tids: string[] = [];
    try {
      tids = readdirSync(`/proc/${pids[i]}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      try {
        for (const child of readFileSync(`/proc/${pids[i]}/task/${tid}/children`, 'utf8').trim().split(' ')) if (child !== '') pids.push(Number(child));
      } catch {
        // The thread ended meanwhile.
      }
    }
  }
  return pids;
}

function processCpuSeconds(pid: number): number {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return 0; // ended meanwhile
  }
  // Fields after the command name (which may hold spaces) start at ")"; utime and stime are fields 14 and 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

function machineCpuSeconds(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
  const [user, nice, system, idle, iowait, irq, softirq, steal] = line.trim().split(/\s+/).slice(1).map(Number);
  const busy = user + nice + system + irq + softirq + (steal ?? 0);
  return { busy: busy / TICKS_PER_SECOND, total: (busy + idle + iowait) / TICKS_PER_SECOND };
}

export interface CpuShare {
  /** Average cores used during the phase by the server, the bench process itself and everything else on the machine. */
  server_cores: number;
  bench_cores: number;
  other_cores: number;
  load_avg_1m: number;
}

/** Measures who used the machine's CPU during a phase: the figures are only as good as the machine was quiet. */
export function startCpuWatch(server: ServerProcess | null): () => CpuShare {
  const started = performance.now();
  const machine = machineCpuSeconds();
  const own = process.cpuUsage();
  const serverStart = server?.running ? server.cpuSeconds() : 0;
  return () => {
    const wall = Math.max((performance.now() - started) / 1000, 1e-6);
    const machineNow = machineCpuSeconds();
    const ownUsed = process.cpuUsage(own);
    const benchSeconds = (ownUsed.user + ownUsed.system) / 1e6;
    const serverSeconds = server?.running ? server.cpuSeconds() - serverStart : 0;
    const machineSeconds = machineNow.busy - machine.busy;
    return {
      server_cores: round(serverSeconds / wall, 2),
      bench_cores: round(benchSeconds / wall, 2),
      other_cores: round(Math.max(0, machineSeconds - serverSeconds - benchSeconds) / wall, 2),
      load_avg_1m: round(os.loadavg()[0], 2),
    };
  };
}

/**
 * Polls a Search (every 20 ms) from the server's spawn until it answers 200 and `accept` takes
 * the answer: the ms since the spawn. Stops the server and throws if it exits or the time runs out.
 */
export async function waitForFirstAnswer(server: ServerProcess, client: LoopbackClient, body: () => object, timeoutMs: number, accept: (answer: { status: number; text: string; ms: number }) => boolean): Promise<number> {
  const deadline = server.spawnedAt + timeoutMs;
  let last = 'no answer';
  while (performance.now() < deadline) {
    if (!server.running) throw new Error(`server exited before answering: ${server.logLines.slice(-5).join(' | ')}`);
    try {
      const answer = await client.post('/search', JSON.stringify(body()), Math.max(1000, deadline - performance.now()));
      if (answer.status === 200 && accept(answer)) return Math.round(performance.now() - server.spawnedAt);
      last = `${answer.status} ${answer.text.slice(0, 200)}`;
    } catch (error) {
      last = (error as Error).message;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  await server.stop();
  throw new Error(`server did not answer a search within ${timeoutMs} ms (last: ${last})`);
}
