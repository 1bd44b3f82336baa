import { constants as fsConstants, statSync } from 'node:fs';
import { mkdir, open, readFile, readdir, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { storageError } from '../../errors.js';
import { withFileLock } from '../file-lock.js';
import type { StoredRecord } from '../stored-record.js';
import { VECTOR_SIDECAR_FILE } from '../vector-sidecar.js';
import { fsyncPath, writeAtomically, writeFully } from './atomic-file.js';
import { stampAt, stampAtNow, stampOf, type FileStamp } from './file-stamp.js';
import type { UserLayout } from './layout.js';
import { recordLine } from './record-lines.js';
import { withSpan } from '../../telemetry/tracing.js';
import type { SidecarWriter } from './sidecar-writer.js';

/** The memories file's stamp now; null when the user has none. */
export function memoriesStamp(layout: UserLayout, userId: string): Promise<FileStamp | null> {
  return stampAt(layout.memoriesFile(userId));
}

/** `memoriesStamp` without leaving the event loop, for the freshness check of every request (see `stampAtNow`). */
export function memoriesStampNow(layout: UserLayout, userId: string): FileStamp | null {
  return stampAtNow(layout.memoriesFile(userId));
}

/**
 * Runs `task` holding the user's lock across processes: every read-modify-write of the user's
 * memories file (appends included, see JsonlMemoryStore) runs inside it. Held only for the write.
 */
export function withUserLock<T>(layout: UserLayout, userId: string, task: () => Promise<T>): Promise<T> {
  return withFileLock(layout.syncFile(userId, 'lock'), task, { ownerDir: layout.lockOwnersDir });
}

/**
 * Runs `task` holding the user's index-cache lock across processes: cache files are written and
 * read (checked, then opened) inside it, so no one reads a graph and a meta of two writers. Taken
 * after the user's lock when both are needed, never before.
 */
export function withCacheLock<T>(layout: UserLayout, userId: string, task: () => Promise<T>): Promise<T> {
  return withFileLock(layout.syncFile(userId, 'cache.lock'), task, { ownerDir: layout.lockOwnersDir });
}

/**
 * The seq every new memory of the user is at least: written before a rewrite or a user deletion
 * takes memories away, so a seq once given out is never given again (a replica tells appends
 * from deletes by counts over seqs, and HNSW caches are keyed by seq).
 */
export async function seqFloor(layout: UserLayout, userId: string): Promise<number> {
  const file = layout.syncFile(userId, 'next-seq');
  // Most users never had memories taken away, so most have no floor: asked synchronously, like
  // the freshness check's stat (file-stamp.ts), their absence costs no trip to libuv's pool and
  // no ENOENT error (every cold load asks). A file written meanwhile by another process is read
  // by the next load, as it would be if it were written just after the read below.
  try {
    if (statSync(file, { throwIfNoEntry: false }) === undefined) return 0;
    const value = Number((await readFile(file, 'utf8')).trim());
    return Number.isSafeInteger(value) && value > 0 ? value : 0;
  } catch {
    return 0;
  }
}

/** Under the user's lock, before the rewrite: no fsync (it matters only to processes running on, which share the page cache). */
export async function writeSeqFloor(layout: UserLayout, userId: string, nextSeq: number): Promise<void> {
  const file = layout.syncFile(userId, 'next-seq');
  try {
    await mkdir(path.dirname(file), { recursive: true });
  } catch (error) {
    throw storageError(error);
  }
  await writeAtomically(file, (handle) => handle.writeFile(`${nextSeq}\n`), { durable: false });
}

/**
 * Appends records and returns only once they are on disk (fsync), so an acknowledged write
 * survives a crash. Returns the file's size before the append and its stamp after it (exact for
 * a caller holding the user's lock: nobody else writes the file meanwhile). `alongside` (the
 * change feed's append) runs once the lines are written, during their fsync: the two fsyncs
 * overlap, and a reader that sees the event finds the lines it names; if it fails, the lines are
 * cut off again and the append fails.
 */
export async function appendRecords(
  layout: UserLayout,
  userId: string,
  records: readonly StoredRecord[],
  alongside?: () => Promise<unknown>,
): Promise<{ sizeBefore: number; stamp: FileStamp } | null> {
  if (records.length === 0) return null;
  await layout.ensureUserDir(userId);
  const file = layout.memoriesFile(userId);
  const payload = Buffer.from(records.map(recordLine).join(''), 'utf8');
  let handle: FileHandle | undefined;
  let sizeBefore = -1;
  try {
    handle = await open(file, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT, 0o600).catch(async (error: NodeJS.ErrnoException) => {
      // Another process deleted the user (its folder) since this one last wrote there.
      if (error.code !== 'ENOENT') throw error;
      layout.forgetUserDir(userId);
      await layout.ensureUserDir(userId);
      return open(file, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT, 0o600);
    });
    sizeBefore = (await handle.stat()).size;
    await writeFully(handle, payload);
    const synced = handle;
    await Promise.all([withSpan('memorypool.store.fsync', { 'memorypool.store.bytes': payload.length }, () => synced.datasync()), alongside?.()]);
    return { sizeBefore, stamp: stampOf(await handle.stat({ bigint: true })) };
  } catch (error) {
    // A failed append (disk full) may have left part of a line behind: cut it off so the
    // file keeps only whole, acknowledged records.
    if (handle && sizeBefore >= 0) await handle.truncate(sizeBefore).catch(() => undefined);
    throw storageError(error);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * Replaces a user's memories: temp file, fsync, rename, fsync the folder; a crash leaves the old
 * or the new file whole. The caller holds the user's lock and read the records inside it, so no
 * append of another process falls between that read and this rename. Returns the new file's stamp.
 */
export async function rewriteRecords(layout: UserLayout, sidecars: SidecarWriter, userId: string, records: readonly StoredRecord[]): Promise<FileStamp> {
  await layout.ensureUserDir(userId);
  // The sidecar describes the file being replaced, and a later replacement may get that file's
  // inode back (ext4 reuses them): `countRecords` would then add the old file's count to the new
  // one's lines. It goes first (a crash in between leaves only a missing cache), after any write
  // of it in flight, and under the cache lock until the rename, so that no process writes one for
  // the old file meanwhile; the next load builds one for the new file.
  await sidecars.inFlight(userId);
  return withCacheLock(layout, userId, async () => {
    try {
      await rm(layout.userFile(userId, VECTOR_SIDECAR_FILE), { force: true });
    } catch (error) {
      throw storageError(error);
    }
    const file = layout.memoriesFile(userId);
    await writeAtomically(file, (handle) => writeRecords(handle, records));
    const stamp = await memoriesStamp(layout, userId);
    if (!stamp) throw storageError(Object.assign(new Error(`${file} vanished after its rewrite`), { code: 'ENOENT' }));
    return stamp;
  });
}

async function writeRecords(handle: FileHandle, records: readonly StoredRecord[]): Promise<void> {
  // Chunked so a large user's rewrite does not build one giant string.
  const chunk: string[] = [];
  let size = 0;
  for (const record of records) {
    // A rewritten file is whole by construction: the Add-completeness marker has done its job.
    const line = recordLine({ ...record, batch: undefined, batch_id: undefined });
    chunk.push(line);
    size += line.length;
    if (size > 1 << 20) {
      await writeFully(handle, Buffer.from(chunk.join(''), 'utf8'));
      chunk.length = 0;
      size = 0;
    }
  }
  if (chunk.length > 0) await writeFully(handle, Buffer.from(chunk.join(''), 'utf8'));
}

/** Removes everything stored for a user, for good. */
export async function deleteUserFiles(layout: UserLayout, sidecars: SidecarWriter, userId: string): Promise<void> {
  const dir = layout.userDir(userId);
  // A sidecar or index being written (here or in another process) would put a file back into the folder being removed.
  await sidecars.inFlight(userId);
  await withCacheLock(layout, userId, async () => {
    try {
      // Retried: an index cache staged without the cache lock may add a temp file while the folder empties.
      await rm(dir, { recursive: true, force: true, maxRetries: 5 });
      layout.forgetUserDir(userId);
      await fsyncPath(layout.usersDir);
    } catch (error) {
      throw storageError(error);
    }
  });
}

/** Bytes on disk per file of a user's folder. */
export async function diskUsage(layout: UserLayout, userId: string): Promise<Record<string, number>> {
  const dir = layout.userDir(userId);
  const usage: Record<string, number> = {};
  let names: string[] = [];
  try {
    names = await readdir(dir);
  } catch {
    return usage;
  }
  for (const name of names) {
    try {
      usage[name] = (await stat(path.join(dir, name))).size;
    } catch {
      // Raced with a rename; the next call sees it.
    }
  }
  return usage;
}
