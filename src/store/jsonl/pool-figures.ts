import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ChangeLog, ChangePlace } from './change-log.js';
import { writeAtomically, writeFully } from './atomic-file.js';

/** What the pool's counts and /mem/stats need of one user, without loading it. */
export interface UserFigures {
  /** Memories stored (expired ones too, until the sweep deletes them). */
  count: number;
  sessions: number;
  /** Bytes of the user's files. */
  bytes: number;
  /** Some line names an `expires_at`: its counts at a given instant are read from the file again. */
  expiring: boolean;
}

/** Users whose files one step measures at once. */
const MEASURE_BATCH = 64;
/** The snapshot is written again at most this often while the figures change (ms). */
const SAVE_EVERY_MS = 60_000;
const SNAPSHOT_VERSION = 1;

interface Snapshot {
  version: number;
  place: ChangePlace;
  /** user id → [count, sessions, bytes, expiring 0/1]. */
  users: Record<string, [number, number, number, number]>;
}

/**
 * Every user's figures (count, sessions, bytes) for `/health` and `/mem/stats`, kept current by
 * the change feed instead of by reading every user: each write, by any process, records its
 * events in `sync/changes.jsonl` (JsonlMemoryStore), after its lines reached the file, so a
 * user named by an event past the place read so far is measured again from its files, and
 * nobody else. The figures and the place are saved in `sync/pool-figures.json` (a cache: written
 * whole, not fsynced, read back at the next start), so neither a start nor a `/health` reads
 * every user; only a data directory without that file (written before it existed) or whose feed
 * was replaced since (a prune) is measured whole, once. Writes of a build older than the change
 * feed record no events: their counts show after a restart that finds no snapshot.
 */
export class PoolFigures {
  private readonly file: string;
  private readonly figures = new Map<string, UserFigures>();
  private place: ChangePlace | null = null;
  private total = 0;
  private nonEmpty = 0;
  private current: Promise<void> | null = null;
  private lastSave = 0;
  private dirty = false;
  /** `userIds()`'s answer until a user is added or removed. */
  private sorted: string[] | null = null;
  /** Moves whenever any user's figures are set (`revision`). */
  private revisionCount = 0;

  constructor(
    syncDir: string,
    private readonly changes: ChangeLog,
    private readonly listUsers: () => Promise<string[]>,
    private readonly measure: (userId: string) => Promise<UserFigures>,
  ) {
    this.file = path.join(syncDir, 'pool-figures.json');
  }

  /** Brings the figures up to the feed's end as of this call (callers arriving meanwhile share one catch-up). */
  async catchUp(): Promise<void> {
    // A catch-up in flight may have read the feed before the caller's own write: wait for it, then one more.
    while (this.current) await this.current;
    this.current = this.step().finally(() => (this.current = null));
    await this.current;
  }

  get memories(): number {
    return this.total;
  }

  get users(): number {
    return this.nonEmpty;
  }

  /** A number that moves whenever some user's figures are set again: a caller's list built at the same revision is still current. */
  get revision(): number {
    return this.revisionCount;
  }

  /**
   * Every user with figures, sorted by id (some may count no memory: callers skip those). The
   * order is kept until a user comes or goes, so /mem/stats over 100,000 users does not sort
   * them at every call (~25 ms of its ~600 measured).
   */
  userIds(): readonly string[] {
    this.sorted ??= [...this.figures.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return this.sorted;
  }

  get(userId: string): UserFigures | undefined {
    return this.figures.get(userId);
  }

  /** Writes the snapshot if the figures changed since the last one (at close). */
  async save(): Promise<void> {
    if (this.dirty && this.place) await this.writeSnapshot();
  }

  private async step(): Promise<void> {
    if (this.place === null && !(await this.readSnapshot())) await this.measureAll();
    const read = await this.changes.tail(this.place);
    if (read === null) {
      await this.measureAll();
      return;
    }
    this.place = read.place;
    const touched = new Set(read.events.map((event) => event.user_id));
    await this.measureUsers([...touched]);
    if (touched.size > 0) this.dirty = true;
    // A deleted user's id leaves the snapshot at once; other changes can wait for the next save.
    const deleted = read.events.some((event) => event.type === 'user_deleted');
    if (this.dirty && (deleted || Date.now() - this.lastSave >= SAVE_EVERY_MS)) await this.writeSnapshot();
  }

  /** Every user measured from its files: the place is taken first, so a write during the pass is measured again after it. */
  private async measureAll(): Promise<void> {
    const start = await this.changes.tail(null);
    this.figures.clear();
    this.revisionCount++;
    this.sorted = null;
    this.total = 0;
    this.nonEmpty = 0;
    await this.measureUsers(await this.listUsers());
    this.place = start!.place;
    await this.writeSnapshot();
  }

  private async measureUsers(userIds: readonly string[]): Promise<void> {
    for (let start = 0; start < userIds.length; start += MEASURE_BATCH) {
      const batch = userIds.slice(start, start + MEASURE_BATCH);
      const measured = await Promise.all(batch.map((userId) => this.measure(userId)));
      batch.forEach((userId, i) => this.set(userId, measured[i]));
    }
  }

  private set(userId: string, figures: UserFigures): void {
    this.revisionCount++;
    const before = this.figures.get(userId);
    this.total += figures.count - (before?.count ?? 0);
    this.nonEmpty += Number(figures.count > 0) - Number((before?.count ?? 0) > 0);
    if (figures.count === 0 && figures.bytes === 0) {
      if (this.figures.delete(userId)) this.sorted = null;
    } else {
      if (before === undefined) this.sorted = null;
      this.figures.set(userId, figures);
    }
  }

  private async readSnapshot(): Promise<boolean> {
    let snapshot: Snapshot;
    try {
      snapshot = JSON.parse(await readFile(this.file, 'utf8')) as Snapshot;
    } catch {
      return false;
    }
    if (snapshot?.version !== SNAPSHOT_VERSION || typeof snapshot.place?.offset !== 'number' || typeof snapshot.users !== 'object') return false;
    for (const [userId, [count, sessions, bytes, expiring]] of Object.entries(snapshot.users)) this.set(userId, { count, sessions, bytes, expiring: expiring === 1 });
    this.place = snapshot.place;
    return true;
  }

  /** A cache: a failed write (a full disk) costs the next start a measure of every user, never a count. */
  private async writeSnapshot(): Promise<void> {
    const users: Snapshot['users'] = {};
    for (const [userId, figures] of this.figures) users[userId] = [figures.count, figures.sessions, figures.bytes, figures.expiring ? 1 : 0];
    const snapshot: Snapshot = { version: SNAPSHOT_VERSION, place: this.place!, users };
    this.dirty = false;
    this.lastSave = Date.now();
    try {
      await mkdir(path.dirname(this.file), { recursive: true });
      // Not fsynced: a crash may lose the newest one, and the older one then read is caught up from its own place.
      await writeAtomically(this.file, (handle) => writeFully(handle, Buffer.from(JSON.stringify(snapshot))), { durable: false });
    } catch {
      this.dirty = true;
    }
  }
}
