import { closeSync, constants as fsConstants, fstatSync, openSync, readSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { storageError } from '../../errors.js';
import type { StoredRecord } from '../stored-record.js';
import { writeFully } from './atomic-file.js';
import { sameFile, stampOf, type FileStamp } from './file-stamp.js';
import { QUARANTINE_FILE, type UserLayout } from './layout.js';
import { incompleteAddStart, parseLines } from './record-lines.js';
import type { SidecarWriter } from './sidecar-writer.js';
import { rewriteRecords } from './user-file.js';

export interface LoadedUser {
  records: StoredRecord[];
  /** Lines that could not be loaded and were moved to the quarantine file (each also logged). */
  quarantined: number;
  /** The file read (null: none), and how many of its bytes the records are. */
  stamp: FileStamp | null;
  bytes: number;
}

/** The lines appended to a file after a point, as far as they are whole (see `readAppended`). */
export interface AppendedLines {
  records: StoredRecord[];
  /** Where the whole lines read end: the next read starts here. */
  end: number;
  stamp: FileStamp;
  /** Bytes after `end`: an append under way (a line or an Add not yet whole), or one cut short by a crash. */
  unfinished: boolean;
}

/**
 * Whether a read may repair what it finds (quarantine lines, rewrite the file): only a caller
 * holding the user's lock, for whom an unfinished tail is a dead writer's, not one under way.
 */
export interface ReadOptions {
  repair?: boolean;
}

/** A memories file as one read saw it. */
export interface MemoriesRead {
  content: Buffer;
  inode: number;
  stamp: FileStamp;
}

/**
 * A memories file up to this size is read at once, synchronously, by a load that asks for it: a
 * user of up to ~150 memories. Four trips to libuv's pool (open, stat, read, close) cost a 100 KB
 * file ~170 µs of CPU against ~40 done here (CHANGELOG.md, "Small users are read at once"), most
 * of a cold small user's read; the event loop waits as long as a read from the page cache takes
 * (tens of µs), or one read from the disk when the file is not cached. A larger file is opened and
 * stat'ed twice (here, then the usual way): a few µs against reading half a megabyte or more.
 */
export const READ_AT_ONCE_MAX_BYTES = 512 * 1024;

/**
 * The user's memories file read synchronously when it holds up to READ_AT_ONCE_MAX_BYTES (null:
 * there is none), for a cold load, which must have the user before it answers; 'large' for a
 * larger one, which the caller reads the usual way. Never for a walk over many users, which would
 * hold the event loop for all of them.
 */
export function readMemoriesNow(layout: UserLayout, userId: string): MemoriesRead | null | 'large' {
  return readSmallNow(layout.memoriesFile(userId));
}

/** The user's memories file, whole; null when there is none. */
export async function readMemories(layout: UserLayout, userId: string): Promise<MemoriesRead | null> {
  const file = layout.memoriesFile(userId);
  let handle: FileHandle | undefined;
  try {
    // One handle for both: the inode recorded in a sidecar (and the stamp) is that of the very bytes read.
    handle = await open(file, 'r');
    const stats = await handle.stat({ bigint: true });
    if (!stats.isFile()) throw notRegularFile();
    return { content: await readWhole(handle, Number(stats.size)), inode: Number(stats.ino), stamp: stampOf(stats) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw storageError(error);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Reading a device or a FIFO may never end (/dev/zero, /dev/full): refused as EINVAL. */
export function notRegularFile(): Error {
  return Object.assign(new Error('not a regular file'), { code: 'EINVAL' });
}

/** `readMemories` synchronously for a file of up to READ_AT_ONCE_MAX_BYTES; 'large' for any other (read the usual way). */
function readSmallNow(file: string): MemoriesRead | null | 'large' {
  let fd: number | undefined;
  try {
    // Non-blocking: opening a FIFO put there by hand would otherwise wait for a writer, on the event loop.
    fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
    const stats = fstatSync(fd, { bigint: true });
    if (!stats.isFile()) throw notRegularFile();
    if (stats.size > BigInt(READ_AT_ONCE_MAX_BYTES)) return 'large';
    const size = Number(stats.size);
    const content = Buffer.allocUnsafeSlow(size);
    let read = 0;
    while (read < size) {
      const bytesRead = readSync(fd, content, read, size - read, read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    // Like readWhole: the bytes are the stamp's; a file that shrank since comes back short.
    return { content: read === size ? content : content.subarray(0, read), inode: Number(stats.ino), stamp: stampOf(stats) };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw storageError(error);
  } finally {
    if (fd !== undefined) {
      try {
        closeSync(fd);
      } catch {
        // Nothing was written through it: a failed close loses nothing.
      }
    }
  }
}

/**
 * Parses the whole file and quarantines what does not load: malformed lines, a torn last line (a
 * crash mid-append) and the records of an Add that was only partly written go to
 * `quarantine.jsonl`, and the memories file is rewritten without them, so the next append cannot
 * glue a good record onto a torn one. Without `repair` (the caller does not hold the user's lock)
 * a file with anything to repair gives null, since a line without its newline may be another
 * process's append under way. Each line's warning is logged once the quarantine file holds it, so
 * whoever reads the log finds the line already moved aside.
 */
export async function parseRepairing(layout: UserLayout, sidecars: SidecarWriter, userId: string, read: MemoriesRead, repair: boolean): Promise<LoadedUser | null> {
  const { content } = read;
  const file = layout.memoriesFile(userId);
  const { records, rejected, warnings } = parseLines(content, 0, content.length, userId);
  if (!repair && (rejected.length > 0 || incompleteAddStart(records) !== -1)) return null;
  const first = incompleteAddStart(records);
  if (first !== -1) {
    layout.logger.warn({ file, records: records.length - first }, 'records of a partly written Add (never acknowledged) quarantined');
    for (const record of records.slice(first)) rejected.push(JSON.stringify(record));
  }
  const complete = first === -1 ? records : records.slice(0, first);
  if (rejected.length > 0) {
    await quarantine(layout, userId, rejected);
    const stamp = await rewriteRecords(layout, sidecars, userId, complete);
    for (const { line, msg } of warnings) layout.logger.warn({ file, line }, msg);
    layout.logger.warn({ file, quarantined: rejected.length, quarantine: layout.userFile(userId, QUARANTINE_FILE) }, 'moved unloadable lines to the quarantine file');
    return { records: complete, quarantined: rejected.length, stamp, bytes: Number(stamp.size) };
  }
  return { records: complete, quarantined: 0, stamp: read.stamp, bytes: content.length };
}

async function quarantine(layout: UserLayout, userId: string, lines: readonly string[]): Promise<void> {
  const handle = await open(layout.userFile(userId, QUARANTINE_FILE), 'a', 0o600);
  try {
    await writeFully(handle, Buffer.from(lines.map((line) => line + '\n').join(''), 'utf8'));
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * The records of the whole lines appended after `from` (a line start), if the file is still the
 * one `expected` describes (else null: it was replaced). Lines are taken up to the last whole
 * line, and never the first records of an Add not yet whole: those are another process's append
 * under way (or one cut short: a locked caller repairs it). Null too for a malformed line.
 */
export async function readAppended(layout: UserLayout, userId: string, expected: FileStamp, from: number): Promise<AppendedLines | null> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(layout.memoriesFile(userId), 'r');
    const stats = await handle.stat({ bigint: true });
    const stamp = stampOf(stats);
    if (!sameFile(stamp, expected) || stats.size < BigInt(from)) return null;
    const bytes = Buffer.alloc(Number(stats.size) - from);
    let read = 0;
    while (read < bytes.length) {
      const { bytesRead } = await handle.read(bytes, read, bytes.length - read, from + read);
      if (bytesRead === 0) break;
      read += bytesRead;
    }
    const whole = bytes.lastIndexOf(10, read - 1) + 1;
    const { records, rejected, starts } = parseLines(bytes, 0, whole, userId);
    if (rejected.length > 0) return null;
    const cut = incompleteAddStart(records);
    const kept = cut === -1 ? records : records.slice(0, cut);
    const end = from + (cut === -1 ? whole : starts[cut]);
    return { records: kept, end, stamp, unfinished: end < from + read };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw storageError(error);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Bytes per read: `readFile` refuses files over 2 GiB (a user of ~700k memories), so large files are read in pieces. */
const READ_CHUNK_BYTES = 1 << 30;

/**
 * The whole file behind `handle` (`size` bytes as its stat gave them) in one buffer of its own, read
 * a gigabyte at a time. A file that grew since its stat is read up to `size`, so the bytes are the
 * stamp's; one that shrank comes back short. Not `handle.readFile()`, which takes a stat of its own
 * (one more trip to libuv's pool on every cold load).
 */
export async function readWhole(handle: FileHandle, size: number): Promise<Buffer> {
  return readInto(handle, Buffer.allocUnsafeSlow(size));
}

/** Fills `buffer` from the file's byte `from` (its start by default), in chunks; a file shorter than that gives the part read. */
export async function readInto(handle: FileHandle, buffer: Buffer, from = 0): Promise<Buffer> {
  const size = buffer.length;
  let read = 0;
  while (read < size) {
    const { bytesRead } = await handle.read(buffer, read, Math.min(READ_CHUNK_BYTES, size - read), from + read);
    if (bytesRead === 0) break;
    read += bytesRead;
  }
  return read === size ? buffer : buffer.subarray(0, read);
}
