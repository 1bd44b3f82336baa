import { createHash } from 'node:crypto';
import { createReadStream, statSync, constants as fsConstants } from 'node:fs';
import { mkdir, open, readFile, readdir, rename, rm, stat, writeFile, type FileHandle } from 'node:fs/promises';
import type { BigIntStats } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger.js';
import { storageError } from '../errors.js';
import { withFileLock } from './file-lock.js';
import { decodeVectors, isStoredRecord, type StoredRecord } from './stored-record.js';
import { checkSidecar, encodeSidecar, sidecarHeader, SIDECAR_HEADER_BYTES, VECTOR_SIDECAR_FILE, vectorAt, type VectorSidecar } from './vector-sidecar.js';
import type { StagedCacheFile } from './vector-index-cache.js';

const USERS_DIR = 'users';
const MEMORIES_FILE = 'memories.jsonl';
const QUARANTINE_FILE = 'quarantine.jsonl';
const USER_FILE = 'user.json';
/** Beside `users/`: per-user lock files and seq floors, which outlive a user's folder. */
const SYNC_DIR = 'sync';

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

function stampOf(stats: BigIntStats): FileStamp {
  return { regular: stats.isFile(), dev: stats.dev, ino: stats.ino, birth: stats.birthtimeNs, size: stats.size, mtime: stats.mtimeNs, ctime: stats.ctimeNs };
}

export interface LoadedUser {
  records: StoredRecord[];
  /** Lines that could not be loaded and were moved to the quarantine file (each also logged). */
  quarantined: number;
  /** The file read (null: none), and how many of its bytes the records are. */
  stamp: FileStamp | null;
  bytes: number;
}

/** A user's records (without `vec`) and, in the same order, their vectors (null where a line has none). */
export interface LoadedUnits extends LoadedUser {
  vectors: Array<Float32Array | null>;
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

/** User folder paths remembered (see userDir), at most. */
const USER_DIRS_KEPT = 100_000;

/** A memories file as one read saw it. */
interface MemoriesRead {
  content: Buffer;
  inode: number;
  stamp: FileStamp;
}

/** Users with fewer memories keep no vector sidecar: their lines decode in no time. */
const SIDECAR_MIN_RECORDS = 256;
/** `,"vec":"`: a `"` preceded by `,` is never inside a JSON string (there it would be `\"`), so this is the key itself. */
const VEC_KEY = Buffer.from(',"vec":"', 'latin1');
const SESSION_KEY = Buffer.from(',"session_id":"', 'latin1');

/**
 * Every read and write of stored data goes through this module, so that a second store
 * (PostgreSQL) can take its place behind the same calls.
 *
 * Layout: `<dataDir>/users/<slug>-<hash>/` holds `user.json` (the exact user id),
 * `memories.jsonl` (one memory per line, the source of truth), `quarantine.jsonl` (lines that
 * failed to load) and index caches whose loss costs nothing but a rebuild.
 *
 * Callers serialise writes per user (the service holds a per-user lock); different users'
 * files are independent, so deleting one memory rewrites only its owner's file.
 */
export class JsonlStore {
  readonly dataDir: string;
  private readonly logger: Logger;
  private readonly knownUserDirs = new Set<string>();
  private readonly userDirs = new Map<string, string>();
  /** Folder names under users/ and their user ids, as of `usersStamp` (see listUsers). */
  private readonly userEntries = new Map<string, string>();
  private usersStamp: string | null = null;
  /** Background sidecar writes, one chain per user (a delete waits for its user's). */
  private readonly sidecarWrites = new Map<string, Promise<void>>();
  private readonly sidecarMinRecords: number;
  private tempCounter = 0;

  constructor(dataDir: string, logger: Logger, options: { sidecarMinRecords?: number } = {}) {
    this.dataDir = path.resolve(dataDir);
    this.logger = logger;
    this.sidecarMinRecords = Math.max(1, options.sidecarMinRecords ?? SIDECAR_MIN_RECORDS);
  }

  async init(): Promise<void> {
    try {
      await mkdir(path.join(this.dataDir, USERS_DIR), { recursive: true });
    } catch (error) {
      throw storageError(error);
    }
  }

  /** The folder of one user: a readable slug plus a hash, so no user id can name a path outside it. */
  userDir(userId: string): string {
    // Remembered: every request's freshness check needs it, and a SHA-256 costs more than the stat.
    let dir = this.userDirs.get(userId);
    if (dir !== undefined) return dir;
    const slug = userId.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 40) || 'u';
    const hash = createHash('sha256').update(userId).digest('hex').slice(0, 16);
    dir = path.join(this.dataDir, USERS_DIR, `${slug}-${hash}`);
    if (this.userDirs.size >= USER_DIRS_KEPT) this.userDirs.clear();
    this.userDirs.set(userId, dir);
    return dir;
  }

  /** Path of a per-user index cache file (read side; writes go through `writeCacheFile`). */
  cacheFilePath(userId: string, name: string): string {
    return path.join(this.userDir(userId), name);
  }

  /**
   * Every user with a folder. Other processes add and remove users, so the folder list is read
   * again whenever the users folder's mtime moved (a stat otherwise); a folder whose user.json is
   * not there yet (another process is creating it) is looked at again on every call.
   */
  async listUsers(): Promise<string[]> {
    const usersDir = path.join(this.dataDir, USERS_DIR);
    let entries: string[] | null = null;
    try {
      const { mtimeNs, ctimeNs } = await stat(usersDir, { bigint: true });
      const stamp = `${mtimeNs}:${ctimeNs}`;
      if (stamp !== this.usersStamp) {
        entries = await readdir(usersDir);
        this.usersStamp = stamp;
      }
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw error;
    }
    if (entries !== null) {
      const present = new Set(entries);
      for (const entry of [...this.userEntries.keys()]) if (!present.has(entry)) this.userEntries.delete(entry);
      for (const entry of entries) if (!this.userEntries.has(entry)) this.userEntries.set(entry, '');
    }
    const users: string[] = [];
    for (const [entry, known] of [...this.userEntries.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
      const userId = known || (await this.readUserId(entry));
      if (userId === null) continue;
      this.userEntries.set(entry, userId);
      users.push(userId);
    }
    return users;
  }

  /** The user id a folder names; null while it has none (being created, or not a user's folder). */
  private async readUserId(entry: string): Promise<string | null> {
    const file = path.join(this.dataDir, USERS_DIR, entry, USER_FILE);
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8')) as { user_id?: unknown };
      if (typeof parsed.user_id === 'string') return parsed.user_id;
      this.logger.warn({ file }, 'user folder without a user id; skipped');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') this.logger.warn({ file, err: (error as Error).message }, 'unreadable user file; folder skipped');
    }
    return null;
  }

  /** The memories file's stamp now; null when the user has none. */
  async stamp(userId: string): Promise<FileStamp | null> {
    try {
      return stampOf(await stat(this.memoriesPath(userId), { bigint: true }));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw storageError(error);
    }
  }

  /**
   * `stamp`, synchronously, for the freshness check every request of a cached user pays: a few
   * microseconds from the inode cache of a local file system, where the asynchronous stat waits
   * for a thread of libuv's pool and back (tens of microseconds, hundreds on a busy machine:
   * bench/README.md). Not for loops over the pool (counts), which would hold the event loop.
   */
  stampNow(userId: string): FileStamp | null {
    try {
      return stampOf(statSync(this.memoriesPath(userId), { bigint: true }));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw storageError(error);
    }
  }

  /**
   * Runs `task` holding the user's lock across processes: every read-modify-write of the user's
   * memories file (appends included, see JsonlMemoryStore) runs inside it. Held only for the write.
   */
  withUserLock<T>(userId: string, task: () => Promise<T>): Promise<T> {
    return withFileLock(this.syncPath(userId, 'lock'), task);
  }

  /**
   * Runs `task` holding the user's index-cache lock across processes: cache files are written and
   * read (checked, then opened) inside it, so no one reads a graph and a meta of two writers. Taken
   * after the user's lock when both are needed, never before.
   */
  withCacheLock<T>(userId: string, task: () => Promise<T>): Promise<T> {
    return withFileLock(this.syncPath(userId, 'cache.lock'), task);
  }

  /**
   * The seq every new memory of the user is at least: written before a rewrite or a user deletion
   * takes memories away, so a seq once given out is never given again (a replica tells appends
   * from deletes by counts over seqs, and HNSW caches are keyed by seq).
   */
  async seqFloor(userId: string): Promise<number> {
    try {
      const value = Number((await readFile(this.syncPath(userId, 'next-seq'), 'utf8')).trim());
      return Number.isSafeInteger(value) && value > 0 ? value : 0;
    } catch {
      return 0;
    }
  }

  /** Under the user's lock, before the rewrite: no fsync (it matters only to processes running on, which share the page cache). */
  async writeSeqFloor(userId: string, nextSeq: number): Promise<void> {
    const file = this.syncPath(userId, 'next-seq');
    const temp = this.tempName(file);
    try {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(temp, `${nextSeq}\n`, { mode: 0o600 });
      await rename(temp, file);
    } catch (error) {
      await rm(temp, { force: true }).catch(() => undefined);
      throw storageError(error);
    }
  }

  private memoriesPath(userId: string): string {
    return path.join(this.userDir(userId), MEMORIES_FILE);
  }

  /** Named by the hash of the user's folder alone: the seq floor outlives a deleted user, and must not spell out part of its id. */
  private syncPath(userId: string, suffix: string): string {
    const folder = path.basename(this.userDir(userId));
    return path.join(this.dataDir, SYNC_DIR, `${folder.slice(folder.lastIndexOf('-') + 1)}.${suffix}`);
  }

  /** A temp name no other writer uses, in this process or another. */
  private tempName(file: string): string {
    return `${file}.tmp-${process.pid}-${++this.tempCounter}`;
  }

  /**
   * Reads a user's memories. Malformed lines, a torn last line (a crash mid-append) and the
   * records of an Add that was only partly written are moved to `quarantine.jsonl` with a
   * warning naming the file and line, and the memories file is rewritten without them, so
   * the next append cannot glue a good record onto a torn one. That repair needs the user's lock
   * (`repair`, the default): without it, a read that finds anything to repair returns null (the
   * caller takes the lock and reads again), since a line without its newline may be another
   * process's append under way.
   */
  async load(userId: string, options?: ReadOptions & { repair?: true }): Promise<LoadedUser>;
  async load(userId: string, options: ReadOptions): Promise<LoadedUser | null>;
  async load(userId: string, options: ReadOptions = {}): Promise<LoadedUser | null> {
    const read = await this.readMemories(userId);
    return read ? this.parseAll(userId, read, options.repair ?? true) : { records: [], quarantined: 0, stamp: null, bytes: 0 };
  }

  /**
   * Reads a user's memories with their vectors decoded (records come without `vec`), for a
   * load into memory. Vectors of the lines the binary sidecar covers are views of it and those
   * lines are parsed with their base64 cut out; the rest is decoded. Whenever the sidecar does
   * not prove current, the whole file is read as `load` reads it, and a new sidecar is written
   * in the background. Anything unusual (a line to quarantine) takes that path too.
   */
  async loadUnits(userId: string, options?: ReadOptions & { repair?: true }): Promise<LoadedUnits>;
  async loadUnits(userId: string, options: ReadOptions): Promise<LoadedUnits | null>;
  async loadUnits(userId: string, options: ReadOptions = {}): Promise<LoadedUnits | null> {
    const read = await this.readMemories(userId);
    if (!read) return { records: [], vectors: [], quarantined: 0, stamp: null, bytes: 0 };
    const sidecar = await this.readSidecar(userId, read.content);
    const fast = sidecar ? this.parseWithSidecar(userId, read.content, sidecar) : null;
    if (fast) {
      const tail = fast.records.length - sidecar!.count;
      if (tail >= Math.max(this.sidecarMinRecords, sidecar!.count / 8)) this.refreshSidecar(userId, read, fast.records, fast.vectors);
      return { ...fast, quarantined: 0, stamp: read.stamp, bytes: read.content.length };
    }
    const decoded = this.parseDecoding(userId, read.content);
    if (decoded) {
      if (decoded.records.length >= this.sidecarMinRecords) this.refreshSidecar(userId, read, decoded.records, decoded.vectors);
      return { ...decoded, quarantined: 0, stamp: read.stamp, bytes: read.content.length };
    }
    const loaded = await this.parseAll(userId, read, options.repair ?? true);
    if (!loaded) return null;
    const vectors = decodeVectors(loaded.records.map((record) => record.vec));
    const records = loaded.records.map(({ vec: _vec, ...record }) => record);
    // After a quarantine the file was rewritten: the next load builds the sidecar from that file.
    if (loaded.quarantined === 0 && records.length >= this.sidecarMinRecords) this.refreshSidecar(userId, read, records, vectors);
    return { ...loaded, records, vectors };
  }

  /** Resolves once the sidecars being written in the background are on disk. */
  async sidecarsSettled(): Promise<void> {
    await Promise.all([...this.sidecarWrites.values()]);
  }

  private async readMemories(userId: string): Promise<MemoriesRead | null> {
    let handle: FileHandle | undefined;
    try {
      // One handle for both: the inode recorded in a sidecar (and the stamp) is that of the very bytes read.
      handle = await open(path.join(this.userDir(userId), MEMORIES_FILE), 'r');
      const stats = await handle.stat({ bigint: true });
      // Reading a device or a FIFO may never end (/dev/zero, /dev/full).
      if (!stats.isFile()) throw Object.assign(new Error(`not a regular file`), { code: 'EINVAL' });
      return { content: await readWhole(handle, Number(stats.size)), inode: Number(stats.ino), stamp: stampOf(stats) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw storageError(error);
    } finally {
      await handle?.close().catch(() => undefined);
    }
  }

  /**
   * Parses the whole file and quarantines what does not load. Each line's warning is logged once
   * the quarantine file holds it, so whoever reads the log finds the line already moved aside.
   */
  private async parseAll(userId: string, read: MemoriesRead, repair: boolean): Promise<LoadedUser | null> {
    const { content } = read;
    const file = path.join(this.userDir(userId), MEMORIES_FILE);
    const { records, rejected, warnings } = this.parseLines(userId, content, 0, content.length);
    if (!repair && (rejected.length > 0 || incompleteAddStart(records) !== -1)) return null;
    const complete = this.dropIncompleteBatches(records, file, rejected);
    if (rejected.length > 0) {
      await this.quarantine(userId, rejected);
      const stamp = await this.rewrite(userId, complete);
      for (const { line, msg } of warnings) this.logger.warn({ file, line }, msg);
      this.logger.warn({ file, quarantined: rejected.length, quarantine: path.join(this.userDir(userId), QUARANTINE_FILE) }, 'moved unloadable lines to the quarantine file');
      return { records: complete, quarantined: rejected.length, stamp, bytes: Number(stamp.size) };
    }
    return { records: complete, quarantined: 0, stamp: read.stamp, bytes: content.length };
  }

  /**
   * The records of the whole lines appended after `from` (a line start), if the file is still the
   * one `expected` describes (else null: it was replaced). Lines are taken up to the last whole
   * line, and never the first records of an Add not yet whole: those are another process's append
   * under way (or one cut short: a locked caller repairs it). Null too for a malformed line.
   */
  async readAppended(userId: string, expected: FileStamp, from: number): Promise<AppendedLines | null> {
    let handle: FileHandle | undefined;
    try {
      handle = await open(path.join(this.userDir(userId), MEMORIES_FILE), 'r');
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
      const { records, rejected, starts } = this.parseLines(userId, bytes, 0, whole);
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

  /** Parses the lines in [from, to); `from` is a line start. Lines that are not memories of this user go to `rejected`, with the warning to log for each. */
  private parseLines(userId: string, content: Buffer, from: number, to: number): { records: StoredRecord[]; starts: number[]; rejected: string[]; warnings: Array<{ line?: number; msg: string }> } {
    const records: StoredRecord[] = [];
    /** Where each record's line starts in `content`. */
    const starts: number[] = [];
    const rejected: string[] = [];
    const warnings: Array<{ line?: number; msg: string }> = [];
    let start = from;
    let lineNumber = from === 0 ? 0 : -1;
    while (start < to) {
      const end = indexIn(content, 10, start);
      const lineEnd = end === -1 || end > to ? to : end;
      if (lineNumber >= 0) lineNumber++;
      const line = content.toString('utf8', start, lineEnd);
      const lineStart = start;
      start = lineEnd + 1;
      if (line.trim() === '') continue;
      const where = lineNumber >= 0 ? lineNumber : undefined;
      if (end === -1 || end > to) {
        warnings.push({ line: where, msg: 'torn last line (no newline: a write was cut short); quarantined' });
        rejected.push(line);
        continue;
      }
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        parsed = undefined;
      }
      if (isStoredRecord(parsed) && parsed.user_id === userId) {
        records.push(parsed);
        starts.push(lineStart);
      } else {
        warnings.push({ line: where, msg: 'malformed memory line; quarantined' });
        rejected.push(line);
      }
    }
    return { records, starts, rejected, warnings };
  }

  /** The sidecar when it proves to be built from this very file, else null (the reason logged). */
  private async readSidecar(userId: string, content: Buffer): Promise<VectorSidecar | null> {
    let bytes: Buffer;
    let handle: FileHandle | undefined;
    try {
      handle = await open(path.join(this.userDir(userId), VECTOR_SIDECAR_FILE), 'r');
      bytes = await readWhole(handle, (await handle.stat()).size);
    } catch {
      return null;
    } finally {
      await handle?.close().catch(() => undefined);
    }
    const checked = checkSidecar(bytes, content);
    if (checked.status === 'valid') return checked.sidecar;
    this.logger.info({ user_dir: this.userDir(userId), reason: checked.reason }, 'vector sidecar not used: decoding the vectors from the memories file');
    return null;
  }

  /**
   * The covered lines parsed without their `vec` (cut out of the bytes before decoding, so its
   * string is never built), each checked against the sidecar's seq; the lines after it as usual.
   * Null when anything does not fit, so the caller reads the file the plain way.
   */
  private parseWithSidecar(userId: string, content: Buffer, sidecar: VectorSidecar): { records: StoredRecord[]; vectors: Array<Float32Array | null> } | null {
    const records: StoredRecord[] = [];
    const vectors: Array<Float32Array | null> = [];
    let start = 0;
    while (start < sidecar.covered) {
      // The sidecar covers whole lines only (checked), so every line here ends in a newline.
      const end = indexIn(content, 10, start);
      const line = cutVector(content, start, end);
      start = end + 1;
      if (line === null) return null;
      if (line.trim() === '') continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        return null;
      }
      const index = records.length;
      if (!isStoredRecord(parsed) || parsed.user_id !== userId || parsed.vec !== undefined) return null;
      if (index >= sidecar.count || sidecar.seqs[index] !== parsed.seq) return null;
      records.push(parsed);
      vectors.push(vectorAt(sidecar, index));
    }
    if (records.length !== sidecar.count) return null;
    const tail = this.parseLines(userId, content, sidecar.covered, content.length);
    if (tail.rejected.length > 0) return null;
    const tailVectors = decodeVectors(tail.records.map((record) => record.vec));
    for (const [i, { vec: _vec, ...record }] of tail.records.entries()) {
      records.push(record);
      vectors.push(tailVectors[i]);
    }
    // An Add cut short: the plain path decides what to quarantine.
    if (incompleteAddStart(records) !== -1) return null;
    return { records, vectors };
  }

  /**
   * The whole file parsed with each line's `vec` decoded into one slab as the line is read (its
   * base64 is cut out of the line and decoded at once), for a load without a usable sidecar.
   * Parsing every record with its `vec` first held all the vectors' 2.7 KB strings at once:
   * 2.7 GB of heap at a million memories, past V8's default limit. Null when any line is unusual
   * (torn, malformed, another user's, a vector of another size, an Add cut short): the plain
   * path then decides what to quarantine.
   */
  private parseDecoding(userId: string, content: Buffer): { records: StoredRecord[]; vectors: Array<Float32Array | null> } | null {
    if (content.length > 0 && content[content.length - 1] !== 0x0a) return null;
    const lines = countLines(content);
    const records: StoredRecord[] = [];
    const vectors: Array<Float32Array | null> = [];
    let slab: Buffer | null = null;
    let floats: Float32Array | null = null;
    let bytes = 0;
    for (let start = 0; start < content.length; ) {
      const end = indexIn(content, 10, start);
      const lineStart = start;
      start = end + 1;
      if (end === lineStart) continue;
      const member = vecMember(content, lineStart, end);
      const line = member ? withoutMember(content, lineStart, end, member) : content.toString('utf8', lineStart, end);
      if (line.trim() === '') continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        return null;
      }
      if (!isStoredRecord(parsed) || parsed.user_id !== userId || parsed.vec !== undefined) return null;
      records.push(parsed);
      if (!member) {
        vectors.push(null);
        continue;
      }
      const base64 = content.toString('latin1', member.key + VEC_KEY.length, member.close);
      const length = Buffer.byteLength(base64, 'base64');
      if (slab === null) {
        if (length === 0 || length % 4 !== 0) return null;
        bytes = length;
        slab = Buffer.alloc(bytes * lines);
        floats = new Float32Array(slab.buffer, slab.byteOffset, slab.length / 4);
      }
      const at = records.length - 1;
      if (length !== bytes || slab.write(base64, at * bytes, bytes, 'base64') !== bytes) return null;
      vectors.push(floats!.subarray((at * bytes) / 4, ((at + 1) * bytes) / 4));
    }
    if (incompleteAddStart(records) !== -1) return null;
    return { records, vectors };
  }

  /**
   * Writes a sidecar for `read` (the file as the load saw it) in the background. A cache: no
   * fsync (a torn one fails its digest), and never a folder of its own (a deleted user's stays gone).
   */
  private refreshSidecar(userId: string, read: MemoriesRead, records: readonly StoredRecord[], vectors: ReadonlyArray<Float32Array | null>): void {
    const dimensions = vectors[0]?.length ?? 0;
    if (dimensions === 0 || vectors.some((vector) => vector === null || vector.length !== dimensions)) return;
    const previous = this.sidecarWrites.get(userId) ?? Promise.resolve();
    const write = previous.then(async () => {
      const file = path.join(this.userDir(userId), VECTOR_SIDECAR_FILE);
      const temp = this.tempName(file);
      try {
        // Under the cache lock, which a rewrite holds from removing the sidecar to renaming its
        // file in: a sidecar is written only while the file it describes is the user's file, so no
        // sidecar outlives its file (whose inode a later file may get back: see countRecords).
        await this.withCacheLock(userId, async () => {
          const now = await this.stamp(userId);
          if (!now || !sameFile(now, read.stamp)) return;
          await writeFile(temp, encodeSidecar(read.content, read.inode, records.map((record) => record.seq), vectors as Float32Array[], dimensions), { mode: 0o600 });
          await rename(temp, file);
        });
      } catch (error) {
        await rm(temp, { force: true }).catch(() => undefined);
        const code = (error as NodeJS.ErrnoException).code ?? ((error as { cause?: NodeJS.ErrnoException }).cause)?.code;
        if (code !== 'ENOENT') this.logger.warn({ file, err: (error as Error).message }, 'vector sidecar not written; the next load decodes the memories file again');
      }
    });
    this.sidecarWrites.set(userId, write);
    void write.then(() => {
      if (this.sidecarWrites.get(userId) === write) this.sidecarWrites.delete(userId);
    });
  }

  /**
   * How many whole lines the user's memories file holds, for counts (nothing is parsed). A
   * sidecar built from this very file (same inode, which a rewrite changes) states the count of
   * the lines it covers, so only the lines appended since are scanned.
   */
  async countRecords(userId: string): Promise<number> {
    const dir = this.userDir(userId);
    let handle: FileHandle | undefined;
    try {
      handle = await open(path.join(dir, MEMORIES_FILE), 'r');
      const { ino, size } = await handle.stat();
      const header = await readHeader(path.join(dir, VECTOR_SIDECAR_FILE));
      const known = header && header.inode === ino && header.covered <= size ? header : { count: 0, covered: 0 };
      if (known.covered === size) return known.count;
      // A piece at a time: a million memories' file is 3 GB, more than one read takes (and a
      // buffer that size only to count newlines).
      const piece = Buffer.allocUnsafe(Math.min(COUNT_PIECE_BYTES, size - known.covered));
      const lines = new LineCounter();
      for (let at = known.covered; at < size; ) {
        const { bytesRead } = await handle.read(piece, 0, Math.min(piece.length, size - at), at);
        if (bytesRead === 0) break;
        lines.push(piece.subarray(0, bytesRead));
        at += bytesRead;
      }
      return known.count + lines.count;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw storageError(error);
    } finally {
      await handle?.close().catch(() => undefined);
    }
  }

  /**
   * Memories (whole lines) and distinct session ids in the user's file, read from the bytes
   * without parsing a line (`,"session_id":"` can only be the key itself, as with `vec`).
   */
  async countSessions(userId: string): Promise<{ count: number; sessions: number }> {
    const read = await this.readMemories(userId);
    if (!read) return { count: 0, sessions: 0 };
    const { content } = read;
    const sessions = new Set<string>();
    let count = 0;
    let start = 0;
    for (let end = indexIn(content, 10, start); end !== -1; end = indexIn(content, 10, start)) {
      if (end > start) {
        count++;
        const key = indexIn(content, SESSION_KEY, start, end);
        if (key !== -1 && key < end) {
          const value = stringEnd(content, key + SESSION_KEY.length, end);
          if (value > key + SESSION_KEY.length) sessions.add(content.toString('utf8', key + SESSION_KEY.length, value));
        }
      }
      start = end + 1;
    }
    return { count, sessions: sessions.size };
  }

  /**
   * Appends records and returns only once they are on disk (fsync), so an acknowledged write
   * survives a crash. Returns the file's size before the append and its stamp after it (exact for
   * a caller holding the user's lock: nobody else writes the file meanwhile).
   */
  async append(userId: string, records: readonly StoredRecord[]): Promise<{ sizeBefore: number; stamp: FileStamp } | null> {
    if (records.length === 0) return null;
    await this.ensureUserDir(userId);
    const file = path.join(this.userDir(userId), MEMORIES_FILE);
    const payload = Buffer.from(records.map((record) => JSON.stringify(record) + '\n').join(''), 'utf8');
    let handle: FileHandle | undefined;
    let sizeBefore = -1;
    try {
      handle = await open(file, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT, 0o600).catch(async (error: NodeJS.ErrnoException) => {
        // Another process deleted the user (its folder) since this one last wrote there.
        if (error.code !== 'ENOENT') throw error;
        this.knownUserDirs.delete(this.userDir(userId));
        await this.ensureUserDir(userId);
        return open(file, fsConstants.O_WRONLY | fsConstants.O_APPEND | fsConstants.O_CREAT, 0o600);
      });
      sizeBefore = (await handle.stat()).size;
      await writeFully(handle, payload);
      await handle.datasync();
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
  async rewrite(userId: string, records: readonly StoredRecord[]): Promise<FileStamp> {
    await this.ensureUserDir(userId);
    const dir = this.userDir(userId);
    // The sidecar describes the file being replaced, and a later replacement may get that file's
    // inode back (ext4 reuses them): `countRecords` would then add the old file's count to the new
    // one's lines. It goes first (a crash in between leaves only a missing cache), after any write
    // of it in flight, and under the cache lock until the rename, so that no process writes one for
    // the old file meanwhile; the next load builds one for the new file.
    await this.sidecarWrites.get(userId);
    return this.withCacheLock(userId, async () => {
      try {
        await rm(path.join(dir, VECTOR_SIDECAR_FILE), { force: true });
      } catch (error) {
        throw storageError(error);
      }
      const file = path.join(dir, MEMORIES_FILE);
      await this.writeAtomically(file, (handle) => writeRecords(handle, records));
      const stamp = await this.stamp(userId);
      if (!stamp) throw storageError(Object.assign(new Error(`${file} vanished after its rewrite`), { code: 'ENOENT' }));
      return stamp;
    });
  }

  /**
   * Writes an index cache file through `write(tempPath)`, then renames it into place, so a
   * reader never sees a half-written index.
   */
  async writeCacheFile(userId: string, name: string, write: (tempPath: string) => Promise<void>): Promise<string | null> {
    const staged = await this.stageCacheFile(userId, name, write);
    if (!staged) return null;
    try {
      return (await staged.commit()) ? staged.checksum : null;
    } finally {
      await staged.discard();
    }
  }

  /**
   * Writes an index cache file's bytes through `write(tempPath)` beside it, fsynced and hashed;
   * `commit` renames them into place. Needs no lock: the temp name is this writer's alone, and a
   * deletion of the user that removes it meanwhile makes this (or `commit`) report the user gone.
   */
  async stageCacheFile(userId: string, name: string, write: (tempPath: string) => Promise<void>): Promise<StagedCacheFile | null> {
    // A cache never creates a folder: a user deleted by another process stays deleted.
    if (!(await this.stamp(userId))) return null;
    const dir = this.userDir(userId);
    const file = path.join(dir, name);
    const temp = this.tempName(file);
    const discard = (): Promise<void> => rm(temp, { force: true }).catch(() => undefined);
    try {
      await write(temp);
      await fsyncPath(temp);
      const checksum = await sha256File(temp);
      const commit = async (): Promise<boolean> => {
        if (!(await this.stamp(userId))) return false;
        try {
          await rename(temp, file);
          await fsyncPath(dir);
          return true;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
          throw storageError(error);
        }
      };
      return { checksum, commit, discard };
    } catch (error) {
      await discard();
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw storageError(error);
    }
  }

  async writeCacheText(userId: string, name: string, text: string): Promise<void> {
    await this.writeCacheFile(userId, name, (temp) => writeFile(temp, text, { mode: 0o600 }));
  }

  /**
   * Whether a cache file still has the checksum recorded when it was written. A library that
   * reads a binary index trusts its bytes (a damaged HNSW graph can crash the process), so a
   * cache is read only once it proves intact.
   */
  async cacheFileMatches(userId: string, name: string, checksum: string): Promise<boolean> {
    try {
      return (await sha256File(path.join(this.userDir(userId), name))) === checksum;
    } catch {
      return false;
    }
  }

  /** A cache file's text, or null when there is none. */
  async readCacheText(userId: string, name: string): Promise<string | null> {
    try {
      return await readFile(path.join(this.userDir(userId), name), 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async removeCacheFile(userId: string, name: string): Promise<void> {
    await rm(path.join(this.userDir(userId), name), { force: true });
  }

  /** Removes everything stored for a user, for good. */
  async deleteUser(userId: string): Promise<void> {
    const dir = this.userDir(userId);
    // A sidecar or index being written (here or in another process) would put a file back into the folder being removed.
    await this.sidecarWrites.get(userId);
    await this.withCacheLock(userId, async () => {
      try {
        // Retried: an index cache staged without the cache lock may add a temp file while the folder empties.
        await rm(dir, { recursive: true, force: true, maxRetries: 5 });
        this.knownUserDirs.delete(dir);
        await fsyncPath(path.join(this.dataDir, USERS_DIR));
      } catch (error) {
        throw storageError(error);
      }
    });
  }

  /** Bytes on disk per file of a user's folder. */
  async diskUsage(userId: string): Promise<Record<string, number>> {
    const dir = this.userDir(userId);
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

  private async ensureUserDir(userId: string): Promise<void> {
    const dir = this.userDir(userId);
    if (this.knownUserDirs.has(dir)) return;
    try {
      await mkdir(dir, { recursive: true });
      const userFile = path.join(dir, USER_FILE);
      const exists = await stat(userFile).then(() => true, () => false);
      if (!exists) {
        await this.writeAtomically(userFile, (handle) => writeFully(handle, Buffer.from(JSON.stringify({ user_id: userId }) + '\n')));
        await fsyncPath(path.join(this.dataDir, USERS_DIR));
      }
      this.knownUserDirs.add(dir);
    } catch (error) {
      throw storageError(error);
    }
  }

  private async writeAtomically(file: string, write: (handle: FileHandle) => Promise<void>): Promise<void> {
    const temp = this.tempName(file);
    let handle: FileHandle | undefined;
    try {
      handle = await open(temp, 'w', 0o600);
      await write(handle);
      await handle.sync();
      await handle.close();
      handle = undefined;
      await rename(temp, file);
      await fsyncPath(path.dirname(file));
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await rm(temp, { force: true }).catch(() => undefined);
      throw storageError(error);
    }
  }

  private async quarantine(userId: string, lines: readonly string[]): Promise<void> {
    const file = path.join(this.userDir(userId), QUARANTINE_FILE);
    const handle = await open(file, 'a', 0o600);
    try {
      await writeFully(handle, Buffer.from(lines.map((line) => line + '\n').join(''), 'utf8'));
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Appends are serialised per user, so a crash can cut short only the last one: if the
   * trailing records of one Add are fewer than it wrote, that Add was never acknowledged.
   * (Rewrites drop `batch`, so deleting single memories never trips this check.)
   */
  private dropIncompleteBatches(records: StoredRecord[], file: string, rejected: string[]): StoredRecord[] {
    const first = incompleteAddStart(records);
    if (first === -1) return records;
    this.logger.warn({ file, records: records.length - first }, 'records of a partly written Add (never acknowledged) quarantined');
    for (const record of records.slice(first)) rejected.push(JSON.stringify(record));
    return records.slice(0, first);
  }
}

/**
 * Where the last Add's records start when fewer of them are there than it wrote (`batch`), so it
 * was never acknowledged; -1 when the records end with a whole Add (or with no Add at all).
 */
function incompleteAddStart(records: readonly StoredRecord[]): number {
  const last = records.at(-1);
  if (last?.request_id === undefined || last.batch === undefined) return -1;
  let first = records.length - 1;
  while (first > 0 && records[first - 1].request_id === last.request_id && records[first - 1].batch !== undefined) first--;
  return records.length - first >= last.batch ? -1 : first;
}

async function writeFully(handle: FileHandle, payload: Buffer): Promise<void> {
  let offset = 0;
  while (offset < payload.length) {
    const { bytesWritten } = await handle.write(payload, offset, payload.length - offset);
    offset += bytesWritten;
  }
}

async function writeRecords(handle: FileHandle, records: readonly StoredRecord[]): Promise<void> {
  // Chunked so a large user's rewrite does not build one giant string.
  const chunk: string[] = [];
  let size = 0;
  for (const record of records) {
    // A rewritten file is whole by construction: the Add-completeness marker has done its job.
    const line = JSON.stringify({ ...record, batch: undefined }) + '\n';
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

/** Newline-terminated lines with something on them (a torn last line is not a memory). */
/** Counts the whole non-empty lines of bytes given a piece at a time, as `countLines` counts them in one buffer. */
export class LineCounter {
  count = 0;
  /** Whether the line under way (cut by the end of the previous piece) has a byte yet. */
  private lineStarted = false;

  push(bytes: Buffer): void {
    const first = bytes.indexOf(10);
    if (first === -1) {
      this.lineStarted ||= bytes.length > 0;
      return;
    }
    if (first > 0 || this.lineStarted) this.count++;
    const last = bytes.lastIndexOf(10);
    this.count += countLines(bytes.subarray(first + 1, last + 1));
    this.lineStarted = last < bytes.length - 1;
  }
}

function countLines(content: Buffer): number {
  let count = 0;
  let start = 0;
  for (let end = indexIn(content, 10, start); end !== -1; end = indexIn(content, 10, start)) {
    if (end > start) count++;
    start = end + 1;
  }
  return count;
}

async function readHeader(file: string): Promise<ReturnType<typeof sidecarHeader>> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(file, 'r');
    const header = Buffer.alloc(SIDECAR_HEADER_BYTES);
    const { bytesRead } = await handle.read(header, 0, header.length, 0);
    return sidecarHeader(header.subarray(0, bytesRead));
  } catch {
    return null;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** Where the JSON string starting at `from` ends (its closing quote; escaped quotes skipped), or `end`. */
function stringEnd(content: Buffer, from: number, end: number): number {
  for (let i = from; i < end; i++) {
    if (content[i] === 0x5c) i++;
    else if (content[i] === 0x22) return i;
  }
  return end;
}

/** The line [start, end) as text without its `vec` member; null when that member is not where it should be. */
function cutVector(content: Buffer, start: number, end: number): string | null {
  const member = vecMember(content, start, end);
  return member ? withoutMember(content, start, end, member) : null;
}

/** The record's own `vec` member in the line [start, end): its leading comma and its closing quote; null when it has none. */
function vecMember(content: Buffer, start: number, end: number): { key: number; close: number } | null {
  const key = recordVecKey(content, start, end);
  if (key === -1 || key >= end) return null;
  const close = indexIn(content, 0x22, key + VEC_KEY.length, end);
  return close === -1 || close >= end ? null : { key, close };
}

function withoutMember(content: Buffer, start: number, end: number, member: { key: number; close: number }): string {
  return content.toString('utf8', start, member.key) + content.toString('utf8', member.close + 1, end);
}

/**
 * Where the record's own `vec` member starts in the line [start, end) (its leading comma), or -1.
 * A metadata key named `vec` holds the same bytes one level deeper: it is the user's value, not a
 * vector, and must stay in the record (a record stored without a vector would otherwise have it
 * cut out and decoded as its vector).
 */
function recordVecKey(content: Buffer, start: number, end: number): number {
  for (let key = indexIn(content, VEC_KEY, start, end); key !== -1; key = indexIn(content, VEC_KEY, key + 1, end)) {
    if (nestingAt(content, start, key) === 1) return key;
  }
  return -1;
}

/** How deep in objects and arrays the byte at `at` is, counted from the line's start; -1 inside a string. */
function nestingAt(content: Buffer, start: number, at: number): number {
  let depth = 0;
  let inString = false;
  for (let i = start; i < at; i++) {
    const byte = content[i];
    if (inString) {
      if (byte === 0x5c) i++;
      else if (byte === 0x22) inString = false;
    } else if (byte === 0x22) inString = true;
    else if (byte === 0x7b || byte === 0x5b) depth++;
    else if (byte === 0x7d || byte === 0x5d) depth--;
  }
  return inString ? -1 : depth;
}

/** Bytes a search looks at per call (see `indexIn`). */
const SEARCH_WINDOW = 1 << 30;

/**
 * `content.indexOf(value, from)`, found before `to` or -1, right past 2 GiB too: Node's indexOf
 * returns offsets beyond 2^31 wrapped to negative numbers (a million memories' file is 3 GB; the
 * load looped forever on it), so it searches subarrays of at most 1 GiB, whose offsets stay small.
 */
export function indexIn(content: Buffer, value: number | Buffer, from: number, to = content.length, window = SEARCH_WINDOW): number {
  const overlap = typeof value === 'number' ? 0 : value.length - 1;
  for (let at = from; at < to; ) {
    const end = Math.min(to, at + Math.max(window, overlap + 1));
    const found = content.subarray(at, end).indexOf(value);
    if (found !== -1) return at + found;
    if (end === to) return -1;
    // A needle of several bytes may straddle two windows.
    at = end - overlap;
  }
  return -1;
}

/** Bytes per read while counting lines. */
const COUNT_PIECE_BYTES = 64 << 20;

/** Bytes per read: `readFile` refuses files over 2 GiB (a user of ~700k memories), so large files are read in pieces. */
const READ_CHUNK_BYTES = 1 << 30;

/**
 * The whole file behind `handle` (`size` bytes as its stat gave them) in one buffer, read a
 * gigabyte at a time. A file that grew since its stat is read up to `size`, as `readFile` would
 * not promise more either; one that shrank comes back short.
 */
async function readWhole(handle: FileHandle, size: number): Promise<Buffer> {
  if (size < READ_CHUNK_BYTES) return handle.readFile();
  const buffer = Buffer.allocUnsafe(size);
  let read = 0;
  while (read < size) {
    const { bytesRead } = await handle.read(buffer, read, Math.min(READ_CHUNK_BYTES, size - read), read);
    if (bytesRead === 0) break;
    read += bytesRead;
  }
  return read === size ? buffer : buffer.subarray(0, read);
}

async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

async function fsyncPath(target: string): Promise<void> {
  const handle = await open(target, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
