import { createHash, randomUUID } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import { open, readFile, rm, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { storageError } from '../errors.js';
import { writeAtomically } from './jsonl/atomic-file.js';

/** The MemoryPool tool's own storage, at the data directory's root (memorypool keeps its users under `users/`). */
const LEGACY_FILE = 'memories.jsonl';
/** Written once the file's memories are durable in the pool: from then on the file is never read again. */
const TAKEN_IN_FILE = `${LEGACY_FILE}.imported`;
/** Held (created with O_EXCL) by the one process taking the file in, so two openers never embed it twice at once. */
const CLAIM_FILE = `${LEGACY_FILE}.importing`;
/** A claim still empty after this long (ms) was left by a process that died between creating and filling it. */
const EMPTY_CLAIM_STALE_MS = 10_000;

export interface TakeInSummary {
  imported: number;
  already_stored: number;
  malformed: number;
  duplicates: number;
}

/** Who holds the claim: a process still running is taking the file in; a dead one left the claim behind. */
interface ClaimHolder {
  pid: number;
  token: string;
}

export type ClaimResult = { status: 'claimed'; claim: LegacyClaim } | { status: 'taken-in' } | { status: 'held'; pid: number };

/**
 * The file-level half of taking in a MemoryPool memories file: whether there is one still to take
 * in, the claim that makes one process do it, and the marker that ends it. The file itself is only
 * ever opened for reading, so it stays byte for byte as the tool left it.
 */
export class LegacyMemoriesFile {
  readonly file: string;
  private readonly dataDir: string;

  constructor(dataDir: string) {
    this.dataDir = path.resolve(dataDir);
    this.file = path.join(this.dataDir, LEGACY_FILE);
  }

  /** True when a file waits to be taken in (present, and no marker says it was). */
  async pending(): Promise<boolean> {
    const present = await stat(this.file).then((info) => info.isFile(), () => false);
    return present && !(await this.takenIn());
  }

  /**
   * Claims the take-in: created with O_EXCL, so of processes opening the directory together one
   * wins. A claim whose process is gone (it crashed mid-way) is broken and claimed again; the
   * take-in is idempotent by id, so what that process stored is not stored twice.
   */
  async claim(): Promise<ClaimResult> {
    for (;;) {
      if (await this.takenIn()) return { status: 'taken-in' };
      const holder: ClaimHolder = { pid: process.pid, token: randomUUID() };
      const claimPath = path.join(this.dataDir, CLAIM_FILE);
      let handle: FileHandle | undefined;
      try {
        handle = await open(claimPath, fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL, 0o600);
        await handle.writeFile(JSON.stringify(holder) + '\n');
        await handle.sync();
      } catch (error) {
        await handle?.close().catch(() => undefined);
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw storageError(error);
        const current = await readHolder(claimPath);
        if (current === null) {
          // Created but not yet filled in by a process that just won, unless it is old: then its process died in between.
          const age = await stat(claimPath).then((info) => Date.now() - info.mtimeMs, () => 0);
          if (age < EMPTY_CLAIM_STALE_MS) return { status: 'held', pid: 0 };
          await rm(claimPath, { force: true });
          continue;
        }
        if (isAlive(current.pid)) return { status: 'held', pid: current.pid };
        // Broken only if it is still the dead process's claim: another breaker may have put its own there meanwhile.
        if ((await readHolder(claimPath))?.token === current.token) await rm(claimPath, { force: true });
        continue;
      }
      await handle.close();
      // The marker may have been written between the check above and the claim.
      if (await this.takenIn()) {
        await rm(claimPath, { force: true });
        return { status: 'taken-in' };
      }
      return { status: 'claimed', claim: new LegacyClaim(this.dataDir, claimPath, this.file) };
    }
  }

  private async takenIn(): Promise<boolean> {
    return stat(path.join(this.dataDir, TAKEN_IN_FILE)).then(() => true, () => false);
  }
}

/** The claim held while this process takes the file in. */
export class LegacyClaim {
  constructor(
    private readonly dataDir: string,
    private readonly claimPath: string,
    private readonly file: string,
  ) {}

  /** The file's bytes (read once: they are parsed, and their digest goes into the marker). */
  async read(): Promise<Buffer> {
    try {
      return await readFile(this.file);
    } catch (error) {
      throw storageError(error);
    }
  }

  /**
   * Records that the file was taken in. Called only once its memories are durable in the pool;
   * temp file, fsync, rename, fsync the folder, so a crash leaves no marker or a whole one (and no
   * marker means the take-in runs again, storing only the ids not yet stored).
   */
  async markTakenIn(content: Buffer, summary: TakeInSummary): Promise<void> {
    const body = { file: LEGACY_FILE, bytes: content.length, sha256: createHash('sha256').update(content).digest('hex'), taken_in_at: new Date().toISOString(), ...summary };
    await writeAtomically(path.join(this.dataDir, TAKEN_IN_FILE), (handle) => handle.writeFile(JSON.stringify(body) + '\n'));
  }

  async release(): Promise<void> {
    await rm(this.claimPath, { force: true });
  }
}

async function readHolder(claimPath: string): Promise<ClaimHolder | null> {
  try {
    const parsed = JSON.parse(await readFile(claimPath, 'utf8')) as Partial<ClaimHolder>;
    return typeof parsed.pid === 'number' && typeof parsed.token === 'string' ? { pid: parsed.pid, token: parsed.token } : null;
  } catch {
    return null;
  }
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists, under another user.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
