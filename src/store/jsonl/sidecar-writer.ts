import type { Hash } from 'node:crypto';
import type { StoredRecord } from '../stored-record.js';
import { digestOf, encodeSidecar, VECTOR_SIDECAR_FILE } from '../vector-sidecar.js';
import { writeAtomically } from './atomic-file.js';
import { sameFile, type FileStamp } from './file-stamp.js';
import type { UserLayout } from './layout.js';
import type { MemoriesRead } from './load-records.js';
import { memoriesStamp, withCacheLock } from './user-file.js';

/** The memories file a sidecar is built from, as a load read it: its bytes hashed, whole or in pieces. */
export interface SidecarSource {
  stamp: FileStamp;
  inode: number;
  /** Bytes of the file the records are (all of it, as read). */
  covered: number;
  /** A digest given exactly those bytes (spent by the write). */
  digest(): Hash;
}

/** The source of a file read whole. */
export function wholeSource(read: MemoriesRead): SidecarSource {
  return { stamp: read.stamp, inode: read.inode, covered: read.content.length, digest: () => digestOf(read.content) };
}

/** Users with fewer memories keep no vector sidecar: their lines decode in no time. */
const SIDECAR_MIN_RECORDS = 256;

/** Writes users' vector sidecars in the background, one chain of writes per user (a rewrite or a delete waits for its user's). */
export class SidecarWriter {
  /** Records a user needs before a load writes a sidecar for them. */
  readonly minRecords: number;
  private readonly writes = new Map<string, Promise<void>>();

  constructor(private readonly layout: UserLayout, minRecords = SIDECAR_MIN_RECORDS) {
    this.minRecords = Math.max(1, minRecords);
  }

  /** The user's sidecar write under way, if any. */
  inFlight(userId: string): Promise<void> | undefined {
    return this.writes.get(userId);
  }

  /** Resolves once the sidecars being written are on disk. */
  async settled(): Promise<void> {
    await Promise.all([...this.writes.values()]);
  }

  /**
   * Writes a sidecar for `read` (the file as the load saw it) in the background. A cache: no
   * fsync (a torn one fails its digest), and never a folder of its own (a deleted user's stays gone).
   */
  refresh(userId: string, read: SidecarSource, records: readonly StoredRecord[], vectors: ReadonlyArray<Float32Array | null>): void {
    const dimensions = vectors[0]?.length ?? 0;
    if (dimensions === 0 || vectors.some((vector) => vector === null || vector.length !== dimensions)) return;
    const previous = this.writes.get(userId) ?? Promise.resolve();
    const write = previous.then(async () => {
      const file = this.layout.userFile(userId, VECTOR_SIDECAR_FILE);
      try {
        // Under the cache lock, which a rewrite holds from removing the sidecar to renaming its
        // file in: a sidecar is written only while the file it describes is the user's file, so no
        // sidecar outlives its file (whose inode a later file may get back: see countRecords).
        await withCacheLock(this.layout, userId, async () => {
          const now = await memoriesStamp(this.layout, userId);
          if (!now || !sameFile(now, read.stamp)) return;
          const bytes = encodeSidecar(read.covered, read.inode, read.digest(), records.map((record) => record.seq), vectors as Float32Array[], dimensions);
          await writeAtomically(file, (handle) => handle.writeFile(bytes), { durable: false });
        });
      } catch (error) {
        // The errno under the storage error: ENOENT is the user's folder deleted meanwhile, nothing to warn of.
        const code = ((error as { cause?: NodeJS.ErrnoException }).cause)?.code ?? (error as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') this.layout.logger.warn({ file, err: (error as Error).message }, 'vector sidecar not written; the next load decodes the memories file again');
      }
    });
    this.writes.set(userId, write);
    void write.then(() => {
      if (this.writes.get(userId) === write) this.writes.delete(userId);
    });
  }
}
