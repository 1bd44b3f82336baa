import { randomBytes } from 'node:crypto';
import { linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createError, storageError } from '../errors.js';

/**
 * An advisory lock between processes on one host, from a lock file (Node has no flock).
 *
 * Taking it: write `{pid, host, start, nonce}` to a temp file beside the lock, then `link()` it to
 * the lock's name. `link` fails with EEXIST when the name exists, atomically, so exactly one of any
 * number of processes gets it, and the lock file is whole from the instant it exists (its content
 * was written before). A waiter polls with a short backoff.
 *
 * A lock whose owner is dead on this host (`kill(pid, 0)` fails with ESRCH, or the pid now belongs
 * to a process started at another time: a reused pid) is stale and broken at once, so a holder
 * killed with SIGKILL blocks the others for one poll. A lock whose owner is alive is never broken,
 * however old; nor one taken on another host (its owner cannot be checked from here). Breaking
 * goes through a second lock file (`<lock>.break`), so that two waiters that both found the same
 * stale lock cannot have the second remove the lock the first has just taken.
 *
 * Release removes the lock file only if it still holds this holder's nonce.
 *
 * The file calls are synchronous: each is a metadata operation of a few microseconds on a local
 * file system, and an Add takes the lock once; the asynchronous calls cost a round trip through
 * libuv's thread pool each (measured: twice the time of the fsynced append itself on a busy
 * machine). Only the waiting is asynchronous.
 *
 * With `ownerDir`, the content is not written for every take: the process keeps one owner file
 * there for its life (`<pid>-<nonce>.owner`) and links it to the lock's name; release checks that
 * the name is still that file (same inode) before removing it. Creating, writing and removing a
 * temp file each time is most of a take's cost (measured: 0.14 ms a take and release against
 * 0.014 ms with the owner file, on this machine's ext4), and every write takes two locks. The
 * lock's content is the same owner record either way, so waiters and breakers read it alike; a
 * process killed with SIGKILL leaves its owner file behind, removed by the next process that
 * starts using the folder (its owner is dead).
 */

export interface LockOwner {
  pid: number;
  host: string;
  /** The process's start time (Linux: /proc/<pid>/stat field 22, clock ticks since boot); null where unknown. */
  start: string | null;
  nonce: string;
}

export interface FileLockOptions {
  /** Give up (STORAGE_UNAVAILABLE) after waiting this long for a live holder (ms). */
  timeoutMs?: number;
  /** A folder on the lock's file system for this process's one owner file (see above). */
  ownerDir?: string;
}

/** A live holder keeps a lock for one write (milliseconds); this long means something is wrong. */
const DEFAULT_TIMEOUT_MS = 30_000;
const FIRST_BACKOFF_MS = 1;
const MAX_BACKOFF_MS = 25;

const host = os.hostname();
const ownStart = startTime(process.pid);
let counter = 0;

/** This process as a lock file names its owner (for a lease kept elsewhere that wants the same staleness test). */
export function thisProcess(): Omit<LockOwner, 'nonce'> {
  return { pid: process.pid, host, start: ownStart };
}

/** Runs `task` holding the lock at `lockPath` (its folder is created when missing). */
export async function withFileLock<T>(lockPath: string, task: () => Promise<T>, options: FileLockOptions = {}): Promise<T> {
  const release = await acquireFileLock(lockPath, options);
  try {
    return await task();
  } finally {
    await release();
  }
}

/** Takes the lock, waiting for a live holder; resolves to the function that releases it. */
export async function acquireFileLock(lockPath: string, options: FileLockOptions = {}): Promise<() => Promise<void>> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const shared = options.ownerDir === undefined ? null : ownerFileIn(options.ownerDir);
  const owner: LockOwner = shared?.owner ?? { pid: process.pid, host, start: ownStart, nonce: `${process.pid}-${++counter}-${randomBytes(6).toString('hex')}` };
  const started = Date.now();
  let backoff = FIRST_BACKOFF_MS;
  for (;;) {
    if (shared ? linkShared(lockPath, shared) : tryLink(lockPath, owner)) {
      return async () => (shared ? releaseShared(lockPath, shared) : releaseFileLock(lockPath, owner.nonce));
    }
    const holder = readOwner(lockPath);
    if (holder === 'gone') continue;
    if (holder === 'unreadable' || isStale(holder)) {
      // A turn of the event loop first: another breaker may hold the breaker lock for a moment.
      if (!breakStale(lockPath, holder === 'unreadable' ? null : holder.nonce)) await new Promise((resolve) => setImmediate(resolve));
      continue;
    }
    if (Date.now() - started > timeoutMs) {
      throw createError('STORAGE_UNAVAILABLE', `Storage is unavailable: ${lockPath} is held by process ${holder.pid} on ${holder.host}`);
    }
    await new Promise((resolve) => setTimeout(resolve, backoff * (0.5 + Math.random())));
    backoff = Math.min(MAX_BACKOFF_MS, backoff * 2);
  }
}

/** Who holds the lock now: its owner, `gone` when it was released meanwhile, `unreadable` when its content is not an owner. */
export function readOwner(lockPath: string): LockOwner | 'gone' | 'unreadable' {
  let text: string;
  try {
    text = readFileSync(lockPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw storageError(error);
  }
  try {
    const parsed = JSON.parse(text) as Partial<LockOwner>;
    if (typeof parsed.pid === 'number' && typeof parsed.host === 'string' && typeof parsed.nonce === 'string') {
      return { pid: parsed.pid, host: parsed.host, start: typeof parsed.start === 'string' ? parsed.start : null, nonce: parsed.nonce };
    }
  } catch {
    // Not JSON: nobody's lock (the content is complete before the name exists), so nobody to wait for.
  }
  return 'unreadable';
}

/** Whether the owner is certainly gone: a dead or reused pid on this host. Never for another host. */
export function isStale(owner: LockOwner): boolean {
  if (owner.host !== host) return false;
  try {
    process.kill(owner.pid, 0);
  } catch (error) {
    // EPERM: alive, someone else's.
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return true;
  }
  const start = startTime(owner.pid);
  return owner.start !== null && start !== null && start !== owner.start;
}

/** Links a temp file holding `owner` to the lock name; false when the lock is held. */
function tryLink(lockPath: string, owner: LockOwner): boolean {
  const temp = `${lockPath}.${owner.nonce}`;
  const content = JSON.stringify(owner) + '\n';
  try {
    try {
      writeFileSync(temp, content, { mode: 0o600 });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      mkdirSync(path.dirname(lockPath), { recursive: true });
      writeFileSync(temp, content, { mode: 0o600 });
    }
  } catch (error) {
    throw storageError(error);
  }
  try {
    linkSync(temp, lockPath);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw storageError(error);
  } finally {
    removeQuietly(temp);
  }
}

/** This process's owner file in a folder: its path, inode and the owner record it holds. */
interface OwnerFile {
  file: string;
  dir: string;
  owner: LockOwner;
  dev: number;
  ino: number;
}

const ownerFiles = new Map<string, OwnerFile>();

/** This process's owner file in `dir`, written on first use; removed when the process exits. */
function ownerFileIn(dir: string): OwnerFile {
  const known = ownerFiles.get(dir);
  if (known) return known;
  const owner: LockOwner = { pid: process.pid, host, start: ownStart, nonce: `${process.pid}-${++counter}-${randomBytes(6).toString('hex')}` };
  const file = path.join(dir, `${owner.nonce}.owner`);
  const entry: OwnerFile = { file, dir, owner, dev: -1, ino: -1 };
  try {
    mkdirSync(dir, { recursive: true });
    removeDeadOwners(dir);
    writeOwnerFile(entry);
  } catch (error) {
    throw storageError(error);
  }
  if (ownerFiles.size === 0) process.once('exit', () => ownerFiles.forEach(({ file: own }) => removeQuietly(own)));
  ownerFiles.set(dir, entry);
  return entry;
}

/**
 * Writes the owner file whole under a name the sweep skips, then renames it into place: a process
 * sweeping the folder at that moment never reads it half-written (and takes it for nobody's).
 */
function writeOwnerFile(entry: OwnerFile): void {
  const temp = `${entry.file}.tmp`;
  writeFileSync(temp, JSON.stringify(entry.owner) + '\n', { mode: 0o600 });
  const stats = statSync(temp);
  renameSync(temp, entry.file);
  entry.dev = stats.dev;
  entry.ino = stats.ino;
}

/** Removes the owner files of processes that are gone (killed before they could remove their own). */
function removeDeadOwners(dir: string): void {
  for (const name of readdirSync(dir)) {
    if (!name.endsWith('.owner')) continue;
    const holder = readOwner(path.join(dir, name));
    if (holder !== 'gone' && (holder === 'unreadable' || isStale(holder))) removeQuietly(path.join(dir, name));
  }
}

/** Links this process's owner file to the lock's name; false when the lock is held. */
function linkShared(lockPath: string, shared: OwnerFile): boolean {
  for (let attempt = 0; ; attempt++) {
    try {
      linkSync(shared.file, lockPath);
      return true;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') return false;
      if (code !== 'ENOENT' || attempt > 0) throw storageError(error);
      // The lock's folder is missing, or the owner file was removed (its folder deleted): make both again.
      try {
        mkdirSync(path.dirname(lockPath), { recursive: true });
        if (!sameInode(shared.file, shared)) {
          mkdirSync(shared.dir, { recursive: true });
          writeOwnerFile(shared);
        }
      } catch (inner) {
        throw storageError(inner);
      }
    }
  }
}

/** Removes the lock's name if it is still this process's owner file (not broken and taken by another meanwhile). */
function releaseShared(lockPath: string, shared: OwnerFile): void {
  if (sameInode(lockPath, shared)) removeQuietly(lockPath);
}

function sameInode(file: string, shared: OwnerFile): boolean {
  try {
    const stats = lstatSync(file);
    return stats.ino === shared.ino && stats.dev === shared.dev;
  } catch {
    return false;
  }
}

/**
 * Removes a stale lock, under the breaker lock: the lock is removed only if it still holds the
 * nonce found stale (null: content that is no owner), so a lock taken meanwhile stays. A breaker
 * left by a process that died within those few microseconds is stale in turn and removed. False
 * when another process was breaking it.
 */
function breakStale(lockPath: string, staleNonce: string | null): boolean {
  const breaker = `${lockPath}.break`;
  const owner: LockOwner = { pid: process.pid, host, start: ownStart, nonce: `${process.pid}-${++counter}-${randomBytes(6).toString('hex')}` };
  if (!tryLink(breaker, owner)) {
    const holder = readOwner(breaker);
    if (holder === 'unreadable' || (holder !== 'gone' && isStale(holder))) removeQuietly(breaker);
    return false;
  }
  try {
    const holder = readOwner(lockPath);
    const stillStale = holder === 'unreadable' ? staleNonce === null : holder !== 'gone' && holder.nonce === staleNonce;
    if (stillStale) removeQuietly(lockPath);
    return true;
  } finally {
    releaseFileLock(breaker, owner.nonce);
  }
}

function releaseFileLock(lockPath: string, nonce: string): void {
  let holder: ReturnType<typeof readOwner>;
  try {
    holder = readOwner(lockPath);
  } catch {
    return;
  }
  // Anything else means the lock was broken while held (the owner judged dead): not ours to remove.
  if (holder !== 'gone' && holder !== 'unreadable' && holder.nonce === nonce) removeQuietly(lockPath);
}

function removeQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // Gone already.
  }
}

/** Linux: field 22 of /proc/<pid>/stat (after the parenthesised command name, which may hold spaces); null elsewhere. */
function startTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // Fields after the name start at field 3 (state); field 22 is index 19.
    return fields[19] ?? null;
  } catch {
    return null;
  }
}
