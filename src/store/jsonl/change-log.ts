import { closeSync, constants as fsConstants, fdatasync as fdatasyncCallback, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, statSync, writeSync } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import path from 'node:path';
import { storageError } from '../../errors.js';
import { withFileLock } from '../file-lock.js';
import type { ChangeDraft, ChangeEvent, ChangeRead } from '../memory-store.js';
import { writeAtomically, writeFully } from './atomic-file.js';

/** An append waiting for its batch (see ChangeLog.append). */
interface PendingAppend {
  drafts: readonly ChangeDraft[];
  resolve: (events: ChangeEvent[]) => void;
  reject: (error: unknown) => void;
}

/** A reader's bookmark every this many lines: a read from any cursor starts at most this many lines early. */
const MARK_EVERY = 256;
/** Bytes read at a time when scanning. */
const CHUNK = 256 * 1024;
const fdatasync = promisify(fdatasyncCallback);
/** Lines one read looks at, at most: a scoped follower skipping other users' events still answers soon. */
const SCAN_LIMIT = 20_000;

export interface FileId {
  dev: number;
  ino: number;
  birth: number;
}

/** A reader's own place in the file: which file (null: none existed yet) and the bytes of whole lines read. */
export interface ChangePlace {
  id: FileId | null;
  offset: number;
}

/** What this process knows of the file as a reader: how far it has read it, and where some seqs start. */
interface ReadIndex {
  id: FileId;
  /** Bytes of whole lines read so far. */
  covered: number;
  firstSeq: number;
  lastSeq: number;
  /** `{seq, offset}` of every MARK_EVERY-th line, in file order. */
  marks: Array<{ seq: number; offset: number }>;
  lines: number;
}

/**
 * The data directory's change feed: `sync/changes.jsonl`, one event a line (no text: see
 * `ChangeEvent`), appended under its own lock (`sync/changes.lock`) which writers take inside the
 * user's lock, so two processes never number two events alike and the file is in seq order.
 *
 * - The next seq is the file's last line's + 1, read from the tail under the lock (remembered
 *   while the file is as this process left it), so numbering continues across processes and
 *   restarts. A torn last line (a writer killed mid-write) is cut off by the next writer: its
 *   write was never acknowledged.
 * - Appends are fsynced before the write they record is acknowledged (see JsonlMemoryStore).
 * - Pruning rewrites the file without the old events (temp file, rename), always keeping the
 *   newest, so the numbering goes on from it. Readers notice the new file by its inode.
 * - Readers take no lock: they read whole lines up to the last newline.
 */
export class ChangeLog {
  readonly file: string;
  private readonly lockFile: string;
  /** The file as this process's last append left it. */
  private written: { id: FileId; size: number; lastSeq: number } | null = null;
  private index: ReadIndex | null = null;
  private fd: number | null = null;

  private readonly lockOptions: { ownerDir: string };

  constructor(syncDir: string, lockOwnersDir: string) {
    this.file = path.join(syncDir, 'changes.jsonl');
    this.lockFile = path.join(syncDir, 'changes.lock');
    this.lockOptions = { ownerDir: lockOwnersDir };
  }

  /** Appends waiting for the batch under way to be durable; they go together in the next one. */
  private waiting: PendingAppend[] = [];
  private flushing = false;

  /**
   * Numbers and appends the events durably; returns them numbered. Appends that arrive while a
   * batch is being written and fsynced wait and go together in the next batch, one lock and one
   * fsync for all of them (group commit): the lock is held across the fsync, so one fsync per
   * append made every write of the data directory wait for all the others' (random-user Adds at
   * 32 clients were as many a second as fsyncs, bench/README.md "Many users"). Each caller still
   * gets its own events back only once they are durable, numbered in the order the appends came.
   */
  append(drafts: readonly ChangeDraft[]): Promise<ChangeEvent[]> {
    if (drafts.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      this.waiting.push({ drafts, resolve, reject });
      if (!this.flushing) void this.flush();
    });
  }

  /** Writes the waiting appends batch after batch until none waits. */
  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting;
        this.waiting = [];
        try {
          const events = await this.appendBatch(batch.flatMap((pending) => pending.drafts));
          let at = 0;
          for (const pending of batch) {
            pending.resolve(events.slice(at, at + pending.drafts.length));
            at += pending.drafts.length;
          }
        } catch (error) {
          for (const pending of batch) pending.reject(error);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /**
   * One batch under the lock. The file stays open between appends and everything but the fsync is
   * a synchronous call of a few microseconds (as the lock is, see file-lock.ts): an asynchronous
   * one costs a round trip through libuv's thread pool, and this runs inside every write. The
   * fsync is the one wait, beside the memory file's own.
   */
  private appendBatch(drafts: readonly ChangeDraft[]): Promise<ChangeEvent[]> {
    return withFileLock(this.lockFile, async () => {
      let sizeBefore = -1;
      let fd = -1;
      try {
        fd = this.openFile();
        const stats = fstatSync(fd);
        const id = idOf(stats);
        let lastSeq: number;
        if (this.written && sameId(this.written.id, id) && this.written.size === stats.size) {
          lastSeq = this.written.lastSeq;
          sizeBefore = stats.size;
        } else {
          const tail = readTail(fd, stats.size);
          // A line without its newline is a dead writer's: never acknowledged, so cut off.
          if (tail.end < stats.size) ftruncateSync(fd, tail.end);
          lastSeq = tail.lastSeq;
          sizeBefore = tail.end;
        }
        const events = drafts.map((draft, i): ChangeEvent => ({ seq: lastSeq + 1 + i, ...draft }));
        const payload = Buffer.from(events.map((event) => JSON.stringify(event) + '\n').join(''), 'utf8');
        for (let offset = 0; offset < payload.length; ) offset += writeSync(fd, payload, offset);
        await fdatasync(fd);
        this.written = { id, size: sizeBefore + payload.length, lastSeq: lastSeq + events.length };
        return events;
      } catch (error) {
        this.written = null;
        if (fd >= 0 && sizeBefore >= 0) {
          try {
            ftruncateSync(fd, sizeBefore);
          } catch {
            // The next writer cuts off what is not a whole line.
          }
        }
        this.closeFile();
        throw storageError(error);
      }
    }, this.lockOptions);
  }

  /** Closes the file this process appends to (the store's close). */
  close(): void {
    this.closeFile();
  }

  /** The open file, opened again when the name now points at another file (a prune renamed a new one in) or at none. */
  private openFile(): number {
    if (this.fd !== null) {
      let current: FileId | null = null;
      try {
        current = idOf(statSync(this.file));
      } catch {
        current = null;
      }
      if (current && sameId(current, idOf(fstatSync(this.fd)))) return this.fd;
      this.closeFile();
    }
    // Read and append: the tail is read through the same descriptor.
    const flags = fsConstants.O_RDWR | fsConstants.O_APPEND | fsConstants.O_CREAT;
    try {
      this.fd = openSync(this.file, flags, 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      mkdirSync(path.dirname(this.file), { recursive: true });
      this.fd = openSync(this.file, flags, 0o600);
    }
    return this.fd;
  }

  private closeFile(): void {
    if (this.fd === null) return;
    try {
      closeSync(this.fd);
    } catch {
      // Closed already.
    }
    this.fd = null;
  }

  async read(after: number, limit: number, userId?: string): Promise<ChangeRead> {
    const index = await this.refresh();
    if (!index || index.lines === 0) return { events: [], scanned: after, oldest: 0, last: 0 };
    const oldest = index.firstSeq - 1;
    const read: ChangeRead = { events: [], scanned: after, oldest, last: index.lastSeq };
    const from = Math.max(after + 1, index.firstSeq);
    if (from > index.lastSeq) return read;
    let mark = index.marks[0];
    for (const candidate of index.marks) {
      if (candidate.seq > from) break;
      mark = candidate;
    }
    let looked = 0;
    await scanLines(this.file, mark.offset, index.covered, (line) => {
      const event = JSON.parse(line) as ChangeEvent;
      if (event.seq < from) return true;
      looked++;
      if (userId === undefined || event.user_id === userId) read.events.push(event);
      read.scanned = event.seq;
      return read.events.length < limit && looked < SCAN_LIMIT;
    });
    return read;
  }

  /**
   * The events after a place in the file (`place.offset` bytes into the file `place.id` names)
   * up to its last whole line, and the place they end: for a reader that keeps its own place
   * (pool-figures.ts) and must not scan the whole file, as `read`'s index does once. Without a
   * place, no events and the end of the file now. Null when the file is no longer that one (a
   * prune replaced it) or is shorter than the place: the caller starts over.
   */
  async tail(place: ChangePlace | null): Promise<{ events: ChangeEvent[]; place: ChangePlace } | null> {
    let stats: Awaited<ReturnType<typeof stat>>;
    try {
      stats = await stat(this.file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw storageError(error);
      return place === null || place.offset === 0 ? { events: [], place: { id: null, offset: 0 } } : null;
    }
    const id = idOf(stats);
    if (place === null) {
      const handle = await open(this.file, 'r').catch((error: unknown) => {
        throw storageError(error);
      });
      try {
        return { events: [], place: { id, offset: readTail(handle.fd, stats.size).end } };
      } finally {
        await handle.close().catch(() => undefined);
      }
    }
    if ((place.id !== null && !sameId(place.id, id)) || stats.size < place.offset) return null;
    const events: ChangeEvent[] = [];
    let offset = place.offset;
    await scanLines(this.file, place.offset, stats.size, (line, _start, end) => {
      events.push(JSON.parse(line) as ChangeEvent);
      offset = end;
      return true;
    });
    return { events, place: { id, offset } };
  }

  /** The last whole line's seq (0: no events), read back from the end: no scan of the file. */
  async lastSeq(): Promise<number> {
    const handle = await open(this.file, 'r').catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw storageError(error);
    });
    if (handle === null) return 0;
    try {
      return readTail(handle.fd, (await handle.stat()).size).lastSeq;
    } finally {
      await handle.close().catch(() => undefined);
    }
  }

  /**
   * Drops the events older than the cutoff but the newest one (under the lock); returns how many
   * went. Only the first line is read unless some must go: every process runs this at start and
   * hourly, and a feed of millions of events must not be scanned each time.
   */
  async prune(cutoffMs: number): Promise<number> {
    const first = await this.firstEvent();
    if (first === null || Date.parse(first.at) >= cutoffMs) return 0;
    return withFileLock(this.lockFile, async () => {
      const kept: string[] = [];
      let dropped = 0;
      let last: string | null = null;
      await scanLines(this.file, 0, Number.MAX_SAFE_INTEGER, (line) => {
        if (last !== null) {
          if (Date.parse((JSON.parse(last) as ChangeEvent).at) >= cutoffMs) kept.push(last);
          else dropped++;
        }
        last = line;
        return true;
      });
      if (last !== null) kept.push(last);
      if (dropped === 0) return 0;
      await writeAtomically(this.file, (handle) => writeFully(handle, Buffer.from(kept.map((line) => line + '\n').join(''), 'utf8')));
      this.written = null;
      return dropped;
    }, this.lockOptions);
  }

  /** The file's first event (null: no file, or no whole line yet). */
  private async firstEvent(): Promise<ChangeEvent | null> {
    const size = await stat(this.file).then(
      (stats) => stats.size,
      (error: NodeJS.ErrnoException) => {
        if (error.code === 'ENOENT') return 0;
        throw storageError(error);
      },
    );
    let first: ChangeEvent | null = null;
    if (size > 0) {
      await scanLines(this.file, 0, size, (line) => {
        first = JSON.parse(line) as ChangeEvent;
        return false;
      });
    }
    return first;
  }

  /** Brings the read index up to the file: the appended lines only, or the whole file when it was replaced. */
  private async refresh(): Promise<ReadIndex | null> {
    let stats: Awaited<ReturnType<typeof stat>>;
    try {
      stats = await stat(this.file);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return (this.index = null);
      throw storageError(error);
    }
    const id = idOf(stats);
    let index = this.index;
    if (!index || !sameId(index.id, id) || stats.size < index.covered) {
      index = { id, covered: 0, firstSeq: 0, lastSeq: 0, marks: [], lines: 0 };
    }
    if (stats.size > index.covered) {
      const grown = index;
      let offset = grown.covered;
      let last: string | null = null;
      // Only the lines the index keeps are parsed (the first, every MARK_EVERY-th, the last): a
      // first read of a feed of millions of events costs a pass over its bytes, not a parse of each.
      await scanLines(this.file, grown.covered, stats.size, (line, start, end) => {
        if (grown.lines % MARK_EVERY === 0) {
          const seq = (JSON.parse(line) as ChangeEvent).seq;
          if (grown.lines === 0) grown.firstSeq = seq;
          grown.marks.push({ seq, offset: start });
        }
        grown.lines++;
        last = line;
        offset = end;
        return true;
      });
      if (last !== null) grown.lastSeq = (JSON.parse(last) as ChangeEvent).seq;
      grown.covered = offset;
    }
    this.index = index;
    return index;
  }
}

/** The end of the last whole line and its event's seq (0 for an empty file), reading back from the end a chunk at a time. */
function readTail(fd: number, size: number): { end: number; lastSeq: number } {
  let end = size;
  let text = '';
  let start = size;
  while (start > 0) {
    const length = Math.min(CHUNK, start);
    start -= length;
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, start);
    text = buffer.toString('utf8') + text;
    const lastNewline = text.lastIndexOf('\n');
    if (lastNewline < 0) continue;
    // Bytes after the last newline: a torn line.
    end = start + Buffer.byteLength(text.slice(0, lastNewline + 1));
    const lines = text.slice(0, lastNewline).split('\n');
    // The first piece may be part of a line that began before this chunk; whole lines only.
    for (let i = lines.length - 1; i >= (start === 0 ? 0 : 1); i--) {
      try {
        const seq = (JSON.parse(lines[i]) as ChangeEvent).seq;
        if (Number.isSafeInteger(seq)) return { end, lastSeq: seq };
      } catch {
        // Not an event: keep looking back.
      }
    }
  }
  return { end: start === 0 && text.lastIndexOf('\n') < 0 ? 0 : end, lastSeq: 0 };
}

/**
 * Calls `onLine` with each whole line in [from, to) and its byte range, until it answers false.
 * A piece after the last newline is left for a later scan.
 */
async function scanLines(file: string, from: number, to: number, onLine: (line: string, start: number, end: number) => boolean): Promise<void> {
  const handle = await open(file, 'r').catch((error: unknown) => {
    throw storageError(error);
  });
  try {
    let position = from;
    let carry = Buffer.alloc(0);
    let carryStart = from;
    while (position < to) {
      const buffer = Buffer.alloc(Math.min(CHUNK, to - position));
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      const data = carry.length > 0 ? Buffer.concat([carry, buffer.subarray(0, bytesRead)]) : buffer.subarray(0, bytesRead);
      let lineStart = 0;
      for (let newline = data.indexOf(10); newline >= 0; newline = data.indexOf(10, lineStart)) {
        const line = data.subarray(lineStart, newline).toString('utf8');
        const more = line.length === 0 || onLine(line, carryStart + lineStart, carryStart + newline + 1);
        lineStart = newline + 1;
        if (!more) return;
      }
      carry = Buffer.from(data.subarray(lineStart));
      carryStart += lineStart;
    }
  } finally {
    await handle.close().catch(() => undefined);
  }
}

function idOf(stats: { dev: number; ino: number; birthtimeMs: number }): FileId {
  return { dev: stats.dev, ino: stats.ino, birth: stats.birthtimeMs };
}

function sameId(a: FileId, b: FileId): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.birth === b.birth;
}
