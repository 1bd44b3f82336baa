import { statSync, type BigIntStats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { storageError } from '../../errors.js';

/**
 * What a stat says of a memories file: its identity (device, inode and birth time: ext4 reuses an
 * inode after a rename, the birth time tells the files apart) and its state (size, times). Equal
 * stamps: the file is as it was. Same identity, larger: only appended to (rewrites rename a new file in).
 */
export interface FileStamp {
  /** False for anything but a regular file (a device, a FIFO put there by hand): never read, see JsonlMemoryStore. */
  regular: boolean;
  dev: bigint;
  ino: bigint;
  birth: bigint;
  size: bigint;
  mtime: bigint;
  ctime: bigint;
}

export function sameFile(a: FileStamp, b: FileStamp): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.birth === b.birth;
}

export function sameStamp(a: FileStamp, b: FileStamp): boolean {
  return sameFile(a, b) && a.size === b.size && a.mtime === b.mtime && a.ctime === b.ctime;
}

export function stampOf(stats: BigIntStats): FileStamp {
  return { regular: stats.isFile(), dev: stats.dev, ino: stats.ino, birth: stats.birthtimeNs, size: stats.size, mtime: stats.mtimeNs, ctime: stats.ctimeNs };
}

/** The file's stamp now; null when there is none. */
export async function stampAt(file: string): Promise<FileStamp | null> {
  try {
    return stampOf(await stat(file, { bigint: true }));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw storageError(error);
  }
}

/**
 * `stampAt`, synchronously, for the freshness check every request of a cached user pays: a few
 * microseconds from the inode cache of a local file system, where the asynchronous stat waits
 * for a thread of libuv's pool and back (tens of microseconds, hundreds on a busy machine:
 * bench/README.md). Not for loops over the pool (counts), which would hold the event loop.
 */
export function stampAtNow(file: string): FileStamp | null {
  try {
    return stampOf(statSync(file, { bigint: true }));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw storageError(error);
  }
}
