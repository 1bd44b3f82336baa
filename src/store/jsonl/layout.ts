import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../logger.js';
import { createError, storageError } from '../../errors.js';
import { fsyncPath, writeAtomically, writeFully } from './atomic-file.js';

const USERS_DIR = 'users';
const MEMORIES_FILE = 'memories.jsonl';
export const QUARANTINE_FILE = 'quarantine.jsonl';
const USER_FILE = 'user.json';
/** Beside `users/`: per-user lock files and seq floors, which outlive a user's folder. */
const SYNC_DIR = 'sync';

/**
 * The data directory's format, in `format.json` beside `users/` (CHANGELOG.md lists each). A
 * directory without the file was written before it existed, in format 1 (the layout above). A
 * build refuses a directory of a newer format instead of misreading it; a change to the files'
 * layout or records that older builds cannot read raises this number.
 */
export const DATA_FORMAT = 1;
const FORMAT_FILE = 'format.json';

/** User folder paths remembered (see userDir), at most. */
const USER_DIRS_KEPT = 100_000;

/**
 * Where a data directory keeps what: `<dataDir>/users/<slug>-<hash>/` holds `user.json` (the exact
 * user id), `memories.jsonl` (one memory per line, the source of truth), `quarantine.jsonl` (lines
 * that failed to load) and caches whose loss costs nothing but a rebuild; `<dataDir>/sync/` the
 * per-user lock files and seq floors. And which users there are.
 */
export class UserLayout {
  readonly dataDir: string;
  readonly logger: Logger;
  private readonly userDirs = new Map<string, string>();
  /** Folders known to exist with their user.json, so an append creates nothing. */
  private readonly knownUserDirs = new Set<string>();
  /** Folder names under users/ and their user ids, as of `usersStamp` (see listUsers). */
  private readonly userEntries = new Map<string, string>();
  private usersStamp: string | null = null;

  constructor(dataDir: string, logger: Logger) {
    this.dataDir = path.resolve(dataDir);
    this.logger = logger;
  }

  get usersDir(): string {
    return path.join(this.dataDir, USERS_DIR);
  }

  async init(): Promise<void> {
    try {
      await mkdir(this.usersDir, { recursive: true });
    } catch (error) {
      throw storageError(error);
    }
    await checkDataFormat(this.dataDir);
  }

  /** The folder of one user: a readable slug plus a hash, so no user id can name a path outside it. */
  userDir(userId: string): string {
    // Remembered: every request's freshness check needs it, and a SHA-256 costs more than the stat.
    let dir = this.userDirs.get(userId);
    if (dir !== undefined) return dir;
    const slug = userId.replace(/[^A-Za-z0-9_-]+/g, '_').slice(0, 40) || 'u';
    const hash = createHash('sha256').update(userId).digest('hex').slice(0, 16);
    dir = path.join(this.usersDir, `${slug}-${hash}`);
    if (this.userDirs.size >= USER_DIRS_KEPT) this.userDirs.clear();
    this.userDirs.set(userId, dir);
    return dir;
  }

  /** A file of the user's folder. */
  userFile(userId: string, name: string): string {
    return path.join(this.userDir(userId), name);
  }

  memoriesFile(userId: string): string {
    return this.userFile(userId, MEMORIES_FILE);
  }

  get syncDir(): string {
    return path.join(this.dataDir, SYNC_DIR);
  }

  /** Where each process keeps the one owner file its locks in sync/ link to (file-lock.ts). */
  get lockOwnersDir(): string {
    return path.join(this.dataDir, SYNC_DIR, 'owners');
  }

  /** Named by the hash of the user's folder alone: the seq floor outlives a deleted user, and must not spell out part of its id. */
  syncFile(userId: string, suffix: string): string {
    const folder = path.basename(this.userDir(userId));
    return path.join(this.dataDir, SYNC_DIR, `${folder.slice(folder.lastIndexOf('-') + 1)}.${suffix}`);
  }

  /** Creates the user's folder and its user.json (written whole: temp file, fsync, rename) unless known to be there. */
  async ensureUserDir(userId: string): Promise<void> {
    const dir = this.userDir(userId);
    if (this.knownUserDirs.has(dir)) return;
    try {
      await mkdir(dir, { recursive: true });
      const userFile = path.join(dir, USER_FILE);
      const exists = await stat(userFile).then(() => true, () => false);
      if (!exists) {
        await writeAtomically(userFile, (handle) => writeFully(handle, Buffer.from(JSON.stringify({ user_id: userId }) + '\n')));
        await fsyncPath(this.usersDir);
      }
      this.knownUserDirs.add(dir);
    } catch (error) {
      throw storageError(error);
    }
  }

  /** The user's folder is gone (deleted here, or by another process): the next write creates it again. */
  forgetUserDir(userId: string): void {
    this.knownUserDirs.delete(this.userDir(userId));
  }

  /**
   * Every user with a folder. Other processes add and remove users, so the folder list is read
   * again whenever the users folder's mtime moved (a stat otherwise); a folder whose user.json is
   * not there yet (another process is creating it) is looked at again on every call.
   */
  async listUsers(): Promise<string[]> {
    let entries: string[] | null = null;
    try {
      const { mtimeNs, ctimeNs } = await stat(this.usersDir, { bigint: true });
      const stamp = `${mtimeNs}:${ctimeNs}`;
      if (stamp !== this.usersStamp) {
        entries = await readdir(this.usersDir);
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
    const file = path.join(this.usersDir, entry, USER_FILE);
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
}

/** Refuses a data directory of a newer format; stamps one that has no stamp yet with this build's. */
async function checkDataFormat(dataDir: string): Promise<void> {
  const file = path.join(dataDir, FORMAT_FILE);
  let text: string | null = null;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw storageError(error);
  }
  if (text === null) {
    try {
      // Every process writes the same bytes: two starting together cannot disagree.
      await writeAtomically(file, (handle) => writeFully(handle, Buffer.from(JSON.stringify({ memorypool_data_format: DATA_FORMAT }) + '\n')));
    } catch (error) {
      throw storageError(error);
    }
    return;
  }
  let format: unknown;
  try {
    format = (JSON.parse(text) as { memorypool_data_format?: unknown }).memorypool_data_format;
  } catch {
    format = undefined;
  }
  if (typeof format !== 'number' || !Number.isInteger(format) || format < 1) {
    throw createError('STORAGE_UNAVAILABLE', `${file} does not name a data format this build knows (${JSON.stringify(text.trim()).slice(0, 80)}); it reads format ${DATA_FORMAT}`);
  }
  if (format > DATA_FORMAT) {
    throw createError('STORAGE_UNAVAILABLE', `The data directory ${dataDir} is in format ${format}, written by a newer memorypool; this build reads format ${DATA_FORMAT} and will not misread it: upgrade memorypool (CHANGELOG.md)`);
  }
}
