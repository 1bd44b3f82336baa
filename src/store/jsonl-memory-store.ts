import type { Logger } from '../logger.js';
import { JsonlStore } from './jsonl-store.js';
import type { MemoryVersion } from '../memory/types.js';
import type { AppendResult, MemoryStore, RemoveResult, StoredUnit, UnitDraft, UpdateResult, UserChanges, UserSnapshot } from './memory-store.js';
import { encodeVector, patchedRecord, versionOf, type RecordPatch, type StoredRecord } from './stored-record.js';

/** What the store must know of a user to write it without reading its file again. */
interface Head {
  nextSeq: number;
  requestIds: Set<string>;
  count: number;
  version: number;
}

/**
 * The store contract over a JSONL data directory (one process owns it). Writes of one user run
 * one at a time here, so seqs and the request-id check are decided inside the write; a small
 * head per user (next seq, request ids, count, version) spares reading the file on each write.
 * Versions come from one process-wide counter, so a user deleted and written again never
 * repeats a version a cache may still hold.
 */
export class JsonlMemoryStore implements MemoryStore {
  readonly kind = 'jsonl';
  readonly files: JsonlStore;
  private readonly heads = new Map<string, Head>();
  private readonly queues = new Map<string, Promise<unknown>>();
  /** Line counts of users whose head is not known (counted without parsing, for the pool's total). */
  private readonly lineCounts = new Map<string, number>();
  /** The users on disk, read once: this process is the directory's only writer. */
  private users: Set<string> | null = null;
  private clock = 0;

  constructor(dataDir: string, logger: Logger) {
    this.files = new JsonlStore(dataDir, logger);
  }

  get location(): string {
    return this.files.dataDir;
  }

  get indexCache(): JsonlStore {
    return this.files;
  }

  init(): Promise<void> {
    return this.files.init();
  }

  async close(): Promise<void> {
    await Promise.all([...this.queues.values()].map((queued) => queued.catch(() => undefined)));
    await this.files.sidecarsSettled();
  }

  async listUsers(): Promise<string[]> {
    this.users ??= new Set(await this.files.listUsers());
    return [...this.users].sort();
  }

  async countMemories(): Promise<number> {
    return (await this.countsByUser()).reduce((sum, count) => sum + count, 0);
  }

  async countUsers(): Promise<number> {
    return (await this.countsByUser()).filter((count) => count > 0).length;
  }

  /** Each user's memory count, from what this store knows of it, else its file's lines (counted once). */
  private async countsByUser(): Promise<number[]> {
    const counts: number[] = [];
    for (const userId of await this.listUsers()) {
      const head = this.heads.get(userId);
      if (head) {
        counts.push(head.count);
        continue;
      }
      let lines = this.lineCounts.get(userId);
      if (lines === undefined) this.lineCounts.set(userId, (lines = await this.files.countRecords(userId)));
      counts.push(lines);
    }
    return counts;
  }

  userCounts(userId: string): Promise<{ count: number; sessions: number }> {
    return this.serial(userId, () => this.files.countSessions(userId));
  }

  async storedBytes(userId: string): Promise<number> {
    const usage = await this.files.diskUsage(userId);
    return Object.values(usage).reduce((sum, size) => sum + size, 0);
  }

  load(userId: string): Promise<UserSnapshot> {
    return this.serial(userId, () => this.readUser(userId));
  }

  async version(userId: string): Promise<number> {
    return (await this.head(userId)).version;
  }

  async changesSince(userId: string, fromSeq: number): Promise<UserChanges> {
    const { version, units } = await this.load(userId);
    return { version, count: units.length, units: units.filter(({ record }) => record.seq >= fromSeq) };
  }

  async hasRequest(userId: string, requestId: string): Promise<boolean> {
    return (await this.head(userId)).requestIds.has(requestId);
  }

  append(userId: string, drafts: readonly UnitDraft[], options: { requestId?: string } = {}): Promise<AppendResult | null> {
    return this.serial(userId, async () => {
      const head = await this.headInQueue(userId);
      if (options.requestId !== undefined && head.requestIds.has(options.requestId)) return null;
      const previousVersion = head.version;
      if (drafts.length === 0) return { records: [], previousVersion, version: previousVersion };
      const records: StoredRecord[] = drafts.map(({ record }, i) => ({
        ...record,
        seq: head.nextSeq + i,
        ...(options.requestId !== undefined ? { batch: drafts.length } : {}),
      }));
      // Append, fsync, and only then count the write as done: an acknowledged Add survives a crash.
      await this.files.append(userId, records.map((record, i) => ({ ...record, vec: encodeVector(drafts[i].vector) })));
      head.nextSeq += records.length;
      head.count += records.length;
      this.heads.set(userId, head);
      this.users?.add(userId);
      if (options.requestId !== undefined) head.requestIds.add(options.requestId);
      head.version = ++this.clock;
      return { records: records.map(({ batch: _batch, ...record }) => record), previousVersion, version: head.version };
    });
  }

  remove(userId: string, ids: readonly string[]): Promise<RemoveResult> {
    const wanted = new Set(ids);
    return this.removeWhere(userId, (record) => wanted.has(record.id));
  }

  removeOlderThan(userId: string, cutoffMs: number): Promise<RemoveResult> {
    return this.removeWhere(userId, (record) => Date.parse(record.created_at) < cutoffMs);
  }

  deleteUser(userId: string): Promise<number> {
    return this.serial(userId, async () => {
      const { units } = await this.readUser(userId);
      await this.files.deleteUser(userId);
      this.heads.delete(userId);
      this.lineCounts.delete(userId);
      this.users?.delete(userId);
      return units.length;
    });
  }

  replaceVectors(userId: string, vectors: ReadonlyArray<{ id: string; vector: Float32Array; model: string }>): Promise<void> {
    const byId = new Map(vectors.map((entry) => [entry.id, entry]));
    return this.serial(userId, async () => {
      const { records } = await this.files.load(userId);
      await this.files.rewrite(
        userId,
        records.map((record) => {
          const replaced = byId.get(record.id);
          return replaced ? { ...record, vec: encodeVector(replaced.vector), model: replaced.model } : record;
        }),
      );
    });
  }

  /**
   * Rewrites the user's file with the memory's next version in place of the old one (temp file,
   * fsync, rename, like a delete), moved to the end: the file stays in seq order. The replaced
   * version goes into the line's `history`, so deleting the memory (a rewrite without its line)
   * or the user (the folder) takes its history off the disk with it.
   */
  update(userId: string, id: string, patch: RecordPatch): Promise<UpdateResult | null> {
    return this.serial(userId, async () => {
      const { records } = await this.files.load(userId);
      const old = records.find((record) => record.id === id);
      if (!old) return null;
      const head = await this.headInQueue(userId);
      const previousVersion = head.version;
      const record = patchedRecord(old, patch, head.nextSeq);
      const line: StoredRecord = { ...record, history: [...(old.history ?? []), versionOf(old)], vec: patch.vector ? encodeVector(patch.vector) : old.vec };
      await this.files.rewrite(userId, [...records.filter((other) => other !== old), line]);
      head.nextSeq += 1;
      head.version = ++this.clock;
      return { record, previousSeq: old.seq, previousVersion, version: head.version };
    });
  }

  history(userId: string, id: string): Promise<MemoryVersion[]> {
    return this.serial(userId, async () => (await this.files.load(userId)).records.find((record) => record.id === id)?.history ?? []);
  }

  /** Rewrites the user's file without the matching memories (temp file, fsync, rename). */
  private removeWhere(userId: string, matches: (record: StoredRecord) => boolean): Promise<RemoveResult> {
    return this.serial(userId, async () => {
      const { records } = await this.files.load(userId);
      const head = await this.headInQueue(userId);
      const previousVersion = head.version;
      const removed = records.filter(matches);
      if (removed.length === 0) return { removed: [], previousVersion, version: previousVersion };
      await this.files.rewrite(userId, records.filter((record) => !matches(record)));
      head.count -= removed.length;
      head.version = ++this.clock;
      return { removed: removed.map(({ id, seq }) => ({ id, seq })), previousVersion, version: head.version };
    });
  }

  private async readUser(userId: string): Promise<UserSnapshot> {
    const { records, vectors } = await this.files.loadUnits(userId);
    const head = this.heads.get(userId) ?? this.newHead(userId, records);
    // History stays on disk: a cache never needs it (`history` reads it when asked).
    const units: StoredUnit[] = records.map(({ batch: _batch, history: _history, ...record }, i) => ({ record, vector: vectors[i] }));
    return { version: head.version, units };
  }

  private head(userId: string): Promise<Head> {
    const known = this.heads.get(userId);
    return known ? Promise.resolve(known) : this.serial(userId, () => this.headInQueue(userId));
  }

  private async headInQueue(userId: string): Promise<Head> {
    const known = this.heads.get(userId);
    if (known) return known;
    return this.newHead(userId, (await this.files.load(userId)).records);
  }

  private newHead(userId: string, records: readonly StoredRecord[]): Head {
    const head: Head = {
      nextSeq: records.reduce((max, record) => Math.max(max, record.seq + 1), 0),
      requestIds: new Set(records.flatMap((record) => (record.request_id === undefined ? [] : [record.request_id]))),
      count: records.length,
      version: records.length === 0 ? 0 : ++this.clock,
    };
    // A user with nothing stored gets a head only once written (lookups of made-up ids keep none).
    if (records.length > 0) this.heads.set(userId, head);
    return head;
  }

  /** Runs one user's store operations one at a time, in arrival order. */
  private serial<T>(userId: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(userId) ?? Promise.resolve();
    const run = previous.catch(() => undefined).then(task);
    const tail = run.catch(() => undefined);
    this.queues.set(userId, tail);
    void tail.then(() => {
      if (this.queues.get(userId) === tail) this.queues.delete(userId);
    });
    return run;
  }
}
