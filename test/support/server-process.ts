import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertBuilt, COMPILED_MAIN } from './compiled.js';
import { register, sleep } from './helper.js';

/**
 * The real server as a child process (`node dist/src/main.js`, compiled), for the tests that must
 * see what a process does: signals, crashes, restarts, its stderr. Traffic stays on 127.0.0.1,
 * every wait is bounded, and the child is killed after the test whatever happens.
 */

export const projectRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface ServerProcess {
  readonly url: string;
  readonly port: number;
  readonly child: ChildProcess;
  /** Resolves once the process has exited. */
  readonly exited: Promise<Exit>;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** The stderr lines that are JSON log records. */
  logs(): Array<Record<string, unknown>>;
  /** Sends the signal and waits (bounded) for the exit. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<Exit>;
  /** Waits (bounded) for an exit already under way, without signalling again. */
  waitForExit(timeoutMs?: number): Promise<Exit>;
  /** Resolves once a log record passes the test; rejects after the timeout. */
  waitForLog(test: (record: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
}

export interface StartOptions {
  dataDir: string;
  /** The script to run (default the compiled server; a .ts entry runs through tsx). */
  entry?: string;
  /** Arguments after the script (`serve` for the CLI). */
  args?: string[];
  /** Where the process runs (default: the repository). */
  cwd?: string;
  /** RLIMIT_FSIZE in KiB (`ulimit -f`): writes past it fail with EFBIG, as on a full disk. */
  fileSizeLimitKb?: number;
  env?: Record<string, string>;
  startTimeoutMs?: number;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export { sleep };

/**
 * Every user keeps an HNSW graph and its cache file: only users past the exhaustive limit keep one,
 * and the suites that test those caches use a few memories per user.
 */
export const KEEP_GRAPHS = { MEMORYPOOL_EXHAUSTIVE_LIMIT: '0' } as const;
/** The same for a service opened in the test's own process. */
export const KEEP_GRAPHS_WEIGHTS = { exhaustiveLimit: 0 } as const;

/** Starts the server and resolves once /health answers; retries once on a port taken meanwhile. */
export async function startServerProcess(options: StartOptions): Promise<ServerProcess> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await startOnce(options, await freePort());
    } catch (error) {
      if (attempt < 2 && (error as Error).message.includes('EADDRINUSE')) continue;
      throw error;
    }
  }
}

async function startOnce(options: StartOptions, port: number): Promise<ServerProcess> {
  // A compiled entry (dist/...js) runs as users run it, without the TypeScript loader.
  const entry = options.entry ?? COMPILED_MAIN;
  if (entry === COMPILED_MAIN) await assertBuilt();
  const args = [...(entry.endsWith('.ts') ? ['--import', 'tsx', entry] : [entry]), ...(options.args ?? [])];
  const [command, commandArgs] =
    options.fileSizeLimitKb === undefined
      ? [process.execPath, args]
      : ['bash', ['-c', `ulimit -f ${options.fileSizeLimitKb} && exec "$0" "$@"`, process.execPath, ...args]];
  const child = spawn(command, commandArgs, {
    cwd: options.cwd ?? projectRoot,
    env: {
      ...process.env,
      MEMORYPOOL_DATA_DIR: options.dataDir,
      MEMORYPOOL_PORT: String(port),
      MEMORYPOOL_HOST: '127.0.0.1',
      MEMORYPOOL_EMBEDDER: 'hash',
      MEMORYPOOL_LOG_LEVEL: 'warn',
      MEMORYPOOL_TOKEN: '',
      MEMORYPOOL_TOKENS_FILE: '',
      ...options.env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  const listeners = new Set<() => void>();
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    stderr += chunk;
    for (const listener of listeners) listener();
  });
  const exited = new Promise<Exit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const isRunning = () => child.exitCode === null && child.signalCode === null;
  register(async () => {
    if (isRunning()) child.kill('SIGKILL');
    await exited;
  });

  const logs = (): Array<Record<string, unknown>> =>
    stderr.split('\n').flatMap((line) => {
      if (!line.startsWith('{')) return [];
      try {
        return [JSON.parse(line) as Record<string, unknown>];
      } catch {
        return [];
      }
    });

  const url = `http://127.0.0.1:${port}`;
  const server: ServerProcess = {
    url,
    port,
    child,
    exited,
    stderr: () => stderr,
    logs,
    async stop(signal = 'SIGTERM', timeoutMs = 10_000) {
      if (isRunning()) child.kill(signal);
      return withTimeout(exited, timeoutMs, `server did not exit within ${timeoutMs} ms of ${signal}`);
    },
    waitForExit(timeoutMs = 10_000) {
      return withTimeout(exited, timeoutMs, `server did not exit within ${timeoutMs} ms`);
    },
    waitForLog(test, timeoutMs = 5_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = logs().find(test);
          if (!found) return;
          cleanup();
          resolve(found);
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`no such log line within ${timeoutMs} ms; stderr:\n${stderr}`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          listeners.delete(check);
        };
        listeners.add(check);
        check();
      });
    },
  };

  // Deadlines here and in the other helpers run on the monotonic clock: in one CI run a start
  // failed "not healthy within the start timeout" 1.2 s after it began, its 20 s counted on
  // Date.now(), which a step of the machine's wall clock (a VM's clock set right) moves at once.
  const deadline = performance.now() + (options.startTimeoutMs ?? 20_000);
  while (performance.now() < deadline) {
    if (!isRunning()) {
      await exited;
      throw new Error(`server exited before it was healthy (code ${child.exitCode}, signal ${child.signalCode}); stderr:\n${stderr}`);
    }
    try {
      const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(1_000) });
      if (response.ok) return server;
    } catch {
      // Not listening yet.
    }
    await sleep(50);
  }
  child.kill('SIGKILL');
  throw new Error(`server not healthy within the start timeout; stderr:\n${stderr}`);
}

function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]);
}

export interface HttpResult {
  status: number;
  body: any;
  text: string;
  headers: Headers;
}

/** One JSON request; network failures reject (the caller decides what a refused connection means). */
export async function request(
  url: string,
  options: { method?: string; body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<HttpResult> {
  const response = await fetch(url, {
    method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
    headers: { ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...options.headers },
    body: options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body),
    signal: AbortSignal.timeout(options.timeoutMs ?? 10_000),
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, body, text, headers: response.headers };
}

/** Waits until every user's HNSW index is attached and complete (the start's background work). */
export async function waitForIndexes(server: { url: string }, timeoutMs = 15_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const stats = (await request(`${server.url}/mem/stats`)).body as { per_user?: Array<{ index: { complete: boolean } }> };
    if ((stats.per_user ?? []).every((entry) => entry.index.complete)) return;
    if (performance.now() > deadline) throw new Error('indexes still incomplete after the start');
    await sleep(50);
  }
}
