import type { Logger } from '../logger.js';
import * as cacheFiles from './jsonl/cache-files.js';
import { countRecords, countSessions } from './jsonl/counts.js';
import type { FileStamp } from './jsonl/file-stamp.js';
import { UserLayout } from './jsonl/layout.js';
import { parseRepairing, readAppended, readMemories, type AppendedLines, type LoadedUser, type ReadOptions } from './jsonl/load-records.js';
import { loadUnits, type LoadedUnits } from './jsonl/load-units.js';
import { SidecarWriter } from './jsonl/sidecar-writer.js';
import * as userFile from './jsonl/user-file.js';
import type { StoredRecord } from './stored-record.js';
import type { IndexCacheFiles, StagedCacheFile } from './vector-index-cache.js';

/**
 * Every read and write of a JSONL data directory goes through this façade, so that a second store
 * (PostgreSQL) can take its place behind the same calls; the pieces under `jsonl/` do the work,
 * each documented where it is done (layout.ts says where each file lives).
 *
 * Callers serialise writes per user (the service holds a per-user lock); different users'
 * files are independent, so deleting one memory rewrites only its owner's file.
 */
export class JsonlStore implements IndexCacheFiles {
  readonly dataDir: string;
  private readonly layout: UserLayout;
  private readonly sidecars: SidecarWriter;

  constructor(dataDir: string, logger: Logger, options: { sidecarMinRecords?: number } = {}) {
    this.layout = new UserLayout(dataDir, logger);
    this.dataDir = this.layout.dataDir;
    this.sidecars = new SidecarWriter(this.layout, options.sidecarMinRecords);
  }

  init(): Promise<void> {
    return this.layout.init();
  }

  /** Beside `users/`: lock files, seq floors and the change feed. */
  get syncDir(): string {
    return this.layout.syncDir;
  }

  get lockOwnersDir(): string {
    return this.layout.lockOwnersDir;
  }

  userDir(userId: string): string {
    return this.layout.userDir(userId);
  }

  listUsers(): Promise<string[]> {
    return this.layout.listUsers();
  }

  stamp(userId: string): Promise<FileStamp | null> {
    return userFile.memoriesStamp(this.layout, userId);
  }

  stampNow(userId: string): FileStamp | null {
    return userFile.memoriesStampNow(this.layout, userId);
  }

  withUserLock<T>(userId: string, task: () => Promise<T>): Promise<T> {
    return userFile.withUserLock(this.layout, userId, task);
  }

  withCacheLock<T>(userId: string, task: () => Promise<T>): Promise<T> {
    return userFile.withCacheLock(this.layout, userId, task);
  }

  seqFloor(userId: string): Promise<number> {
    return userFile.seqFloor(this.layout, userId);
  }

  writeSeqFloor(userId: string, nextSeq: number): Promise<void> {
    return userFile.writeSeqFloor(this.layout, userId, nextSeq);
  }

  /** The user's records, with `repair` (the default) quarantining what does not load; null without it when something would be (see `parseRepairing`). */
  async load(userId: string, options?: ReadOptions & { repair?: true }): Promise<LoadedUser>;
  async load(userId: string, options: ReadOptions): Promise<LoadedUser | null>;
  async load(userId: string, options: ReadOptions = {}): Promise<LoadedUser | null> {
    const read = await readMemories(this.layout, userId);
    return read ? parseRepairing(this.layout, this.sidecars, userId, read, options.repair ?? true) : { records: [], quarantined: 0, stamp: null, bytes: 0 };
  }

  /** `load` with the vectors decoded, the fast way when it can (see load-units.ts). */
  async loadUnits(userId: string, options?: ReadOptions & { repair?: true }): Promise<LoadedUnits>;
  async loadUnits(userId: string, options: ReadOptions): Promise<LoadedUnits | null>;
  async loadUnits(userId: string, options: ReadOptions = {}): Promise<LoadedUnits | null> {
    return loadUnits(this.layout, this.sidecars, userId, options.repair ?? true);
  }

  /** Resolves once the sidecars being written in the background are on disk. */
  sidecarsSettled(): Promise<void> {
    return this.sidecars.settled();
  }

  readAppended(userId: string, expected: FileStamp, from: number): Promise<AppendedLines | null> {
    return readAppended(this.layout, userId, expected, from);
  }

  countRecords(userId: string): Promise<number> {
    return countRecords(this.layout, userId);
  }

  countSessions(userId: string, nowMs?: number): Promise<{ count: number; sessions: number; expiring: boolean }> {
    return countSessions(this.layout, userId, nowMs);
  }

  append(userId: string, records: readonly StoredRecord[], alongside?: () => Promise<unknown>): Promise<{ sizeBefore: number; stamp: FileStamp } | null> {
    return userFile.appendRecords(this.layout, userId, records, alongside);
  }

  rewrite(userId: string, records: readonly StoredRecord[]): Promise<FileStamp> {
    return userFile.rewriteRecords(this.layout, this.sidecars, userId, records);
  }

  deleteUser(userId: string): Promise<void> {
    return userFile.deleteUserFiles(this.layout, this.sidecars, userId);
  }

  diskUsage(userId: string): Promise<Record<string, number>> {
    return userFile.diskUsage(this.layout, userId);
  }

  /** Path of a per-user index cache file (read side; writes go through `writeCacheFile`). */
  cacheFilePath(userId: string, name: string): string {
    return this.layout.userFile(userId, name);
  }

  writeCacheFile(userId: string, name: string, write: (tempPath: string) => Promise<void>): Promise<string | null> {
    return cacheFiles.writeCacheFile(this.layout, userId, name, write);
  }

  stageCacheFile(userId: string, name: string, write: (tempPath: string) => Promise<void>): Promise<StagedCacheFile | null> {
    return cacheFiles.stageCacheFile(this.layout, userId, name, write);
  }

  writeCacheText(userId: string, name: string, text: string): Promise<void> {
    return cacheFiles.writeCacheText(this.layout, userId, name, text);
  }

  cacheFileMatches(userId: string, name: string, checksum: string): Promise<boolean> {
    return cacheFiles.cacheFileMatches(this.layout, userId, name, checksum);
  }

  readCacheText(userId: string, name: string): Promise<string | null> {
    return cacheFiles.readCacheText(this.layout, userId, name);
  }

  removeCacheFile(userId: string, name: string): Promise<void> {
    return cacheFiles.removeCacheFile(this.layout, userId, name);
  }
}
