import { randomUUID } from 'node:crypto';
import type { Logger } from '../logger.js';
import { sameFile, sameStamp } from './jsonl/file-stamp.js';
import { admitToHead, moveHead, newHead, type Head } from './jsonl/file-head.js';
import type { LoadedUser } from './jsonl/load-records.js';
import { UserQueue } from './jsonl/user-queue.js';
import { JsonlStore } from './jsonl-store.js';
import type { MemoryVersion } from '../domain/memory.js';
import { batchEvents, planBatch, type BatchPlan } from './batch-plan.js';
import { JsonlWebhookState } from './jsonl/webhook-state-file.js';
import { ChangeLog } from './jsonl/change-log.js';
import { PoolFigures } from './jsonl/pool-figures.js';
import type { AppendResult, BatchResult, BatchWrite, ChangeDraft, ChangeRead, MemoryStore, PoolFigure, RemoveResult, StoredUnit, UnitDraft, UpdateResult, UserChanges, UserSnapshot, WriteResult } from './memory-store.js';
import { STORE_APPEND, STORE_REWRITE, withSpan } from '../telemetry/tracing.js';
import { cachedRecord, decodeVectors, encodeVector, patchedRecord, versionOf, withoutWriteMarks, type RecordPatch, type StoredRecord } from './stored-record.js';

/**
 * The store contract over a JSONL data directory that any number of processes (servers, CLI
 * commands, `memorypool mcp`) may open at once.
 *
 * - Every read-modify-write of a user's file runs under the user's lock, across processes
 *   (`withUserLock`): appends (catch up on the file's tail, assign seqs, check the request id,
 *   append, fsync), rewrites (read, write a temp file, rename) and deletions. So seqs and request
 *   ids stay exact, and an append by another process lands before a rewrite's read (kept) or
 *   after its rename (in the new file): none is dropped.
 * - Reads take no lock. Each request stats the user's file and compares the stamp with the head:
 *   unchanged, the version stands; grown on the same file, only the appended lines are read;
 *   replaced (a rewrite) or gone, the head is read again. Either way the version moves on.
 * - Versions come from one process-wide counter: they never repeat, and a cache compares only
 *   versions of its own store.
 * - Seqs are never given out twice (a floor outlives rewrites and deletions: `JsonlStore.seqFloor`).
 * - Every write but a re-embedding records its change events (`ChangeLog`, sync/changes.jsonl)
 *   inside the user's lock and durably before it returns: an append's during its own fsync, a
 *   rewrite's or a deletion's right after it (so the feed never names a change not made).
 */
export class JsonlMemoryStore implements MemoryStore {
  readonly kind = 'jsonl';
  readonly files: JsonlStore;
  private readonly heads = new Map<string, Head>();
  private readonly queue = new UserQueue();
  readonly changes: ChangeLog;
  readonly webhooks: JsonlWebhookState;
  /** Every user's counts and bytes, kept by the change feed (pool-figures.ts). */
  private readonly figures: PoolFigures;
  /** `poolFigures`' last answer, at the figures' revision then, while no user in it holds an expiring memory (whose counts depend on the instant). */
  private listed: { revision: number; figures: PoolFigure[] } | null = null;
  private clock = 0;

  constructor(dataDir: string, logger: Logger) {
    this.files = new JsonlStore(dataDir, logger);
    this.changes = new ChangeLog(this.files.syncDir, this.files.lockOwnersDir);
    this.webhooks = new JsonlWebhookState(this.files.syncDir);
    this.figures = new PoolFigures(this.files.syncDir, this.changes, () => this.listUsers(), async (userId) => {
      const [counts, usage] = await Promise.all([this.files.countSessions(userId), this.files.diskUsage(userId)]);
      return { ...counts, bytes: Object.values(usage).reduce((sum, size) => sum + size, 0) };
    });
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
    await this.queue.settled();
    await this.files.sidecarsSettled();
    await this.figures.save().catch(() => undefined);
    this.changes.close();
  }

  listUsers(): Promise<string[]> {
    return this.files.listUsers();
  }

  async countMemories(): Promise<number> {
    await this.figures.catchUp();
    return this.figures.memories;
  }

  async countUsers(): Promise<number> {
    await this.figures.catchUp();
    return this.figures.users;
  }

  async poolFigures(nowMs: number): Promise<PoolFigure[]> {
    await this.figures.catchUp();
    const revision = this.figures.revision;
    if (this.listed?.revision === revision) return this.listed.figures.slice();
    let expiring = false;
    const figures: PoolFigure[] = [];
    for (const userId of this.figures.userIds()) {
      // A user deleted while an expiring one's counts were read is gone from the figures.
      const known = this.figures.get(userId);
      if (known === undefined || known.count === 0) continue;
      // Only a user whose file names an expiry is read again: its counts depend on the instant.
      expiring ||= known.expiring;
      const counts = known.expiring ? await this.userCounts(userId, nowMs) : known;
      if (counts.count > 0) figures.push({ userId, count: counts.count, sessions: counts.sessions, bytes: known.bytes });
    }
    // Unchanged until some user's figures are set again, unless some user's counts move with the clock.
    this.listed = expiring || this.figures.revision !== revision ? null : { revision, figures };
    return figures.slice();
  }

  /** The head's count: a user's first write reads its file for the head anyway, which the append then uses. */
  async storedCount(userId: string): Promise<number> {
    return (await this.head(userId))?.count ?? 0;
  }

  async userCounts(userId: string, nowMs?: number): Promise<{ count: number; sessions: number }> {
    const { count, sessions } = await this.queue.run(userId, () => this.files.countSessions(userId, nowMs));
    return { count, sessions };
  }

  async storedBytes(userId: string): Promise<number> {
    const usage = await this.files.diskUsage(userId);
    return Object.values(usage).reduce((sum, size) => sum + size, 0);
  }

  load(userId: string): Promise<UserSnapshot> {
    return this.queue.run(userId, () => this.readUser(userId));
  }

  async version(userId: string): Promise<number> {
    return (await this.head(userId))?.version ?? 0;
  }

  changesSince(userId: string, fromSeq: number): Promise<UserChanges> {
    return this.queue.run(userId, async () => {
      const head = await this.catchUp(userId, false);
      if (!head) return { version: 0, count: 0, units: [] };
      if (fromSeq >= head.nextSeq) return { version: head.version, count: head.count, units: [] };
      // Only appends since `fromSeq`: read just those lines.
      const offset = head.offsets.get(fromSeq);
      const appended = offset === undefined ? null : await this.files.readAppended(userId, head.file, offset);
      // Seqs grow along the file, so the lines from there to what the head covers are exactly the seqs asked for.
      if (appended && appended.end >= head.covered) {
        const records = appended.records.filter((record) => record.seq < head.nextSeq);
        if (records.every((record) => record.seq >= fromSeq)) return { version: head.version, count: head.count, units: toUnits(records) };
      }
      const { version, units } = await this.readUser(userId);
      return { version, count: units.length, units: units.filter(({ record }) => record.seq >= fromSeq) };
    });
  }

  async hasRequest(userId: string, requestId: string): Promise<boolean> {
    return (await this.head(userId))?.requestIds.has(requestId) ?? false;
  }

  append(userId: string, drafts: readonly UnitDraft[], options: { requestId?: string; batchId?: string } = {}): Promise<AppendResult | null> {
    return this.withUserLock(userId, async () => {
      // Inside the lock nobody else writes the file: once caught up, seqs and request ids are exact.
      const head = await this.catchUp(userId, true);
      if (options.requestId !== undefined && head?.requestIds.has(options.requestId)) return null;
      const previousVersion = head?.version ?? 0;
      if (drafts.length === 0) return { records: [], previousVersion, version: previousVersion };
      const nextSeq = head?.nextSeq ?? (await this.files.seqFloor(userId));
      const records: StoredRecord[] = drafts.map(({ record }, i) => ({
        ...record,
        seq: nextSeq + i,
        ...(options.requestId !== undefined || options.batchId !== undefined ? { batch: drafts.length } : {}),
        ...(options.batchId !== undefined ? { batch_id: options.batchId } : {}),
      }));
      // Append, fsync, and only then count the write as done: an acknowledged Add survives a crash.
      const at = new Date().toISOString();
      const events = records.map((record): ChangeDraft => ({ type: 'added', at, user_id: userId, memory_id: record.id, version: record.version ?? 1 }));
      const written = (await withSpan(STORE_APPEND, { 'memorypool.store': 'jsonl', 'memorypool.store.records': records.length }, () =>
        this.files.append(
          userId,
          records.map((record, i) => ({ ...record, vec: encodeVector(drafts[i].vector) })),
          () => this.changes.append(events),
        ),
      ))!;
      const version = ++this.clock;
      if (head && written.sizeBefore === head.covered && sameFile(head.file, written.stamp)) {
        head.nextSeq += records.length;
        head.count += records.length;
        if (options.requestId !== undefined) head.requestIds.add(options.requestId);
        head.version = version;
        moveHead(head, written.stamp, Number(written.stamp.size));
      } else if (written.sizeBefore === 0) {
        this.heads.set(userId, newHead(records, version, written.stamp, Number(written.stamp.size), 0));
      } else {
        // The file was not where the head left it (a writer outside the lock): read it again next time.
        this.heads.delete(userId);
      }
      return { records: records.map(withoutWriteMarks), previousVersion, version };
    });
  }

  remove(userId: string, ids: readonly string[], options: { expired?: boolean } = {}): Promise<RemoveResult> {
    const wanted = new Set(ids);
    return this.removeWhere(userId, (record) => wanted.has(record.id), options.expired ? 'expired' : 'deleted');
  }

  removeOlderThan(userId: string, cutoffMs: number): Promise<RemoveResult> {
    return this.removeWhere(userId, (record) => Date.parse(record.created_at) < cutoffMs);
  }

  deleteUser(userId: string): Promise<number> {
    return this.withUserLock(userId, async () => {
      const loaded = await this.files.load(userId);
      const head = this.fromRead(userId, loaded, await this.files.seqFloor(userId));
      // The seqs given out so far stay given out: a user written again starts after them.
      if (head) await this.files.writeSeqFloor(userId, head.nextSeq);
      await this.files.deleteUser(userId);
      if (head) await this.changes.append([{ type: 'user_deleted', at: new Date().toISOString(), user_id: userId, memory_id: null, version: null }]);
      this.heads.delete(userId);
      return loaded.records.length;
    });
  }

  replaceVectors(userId: string, vectors: ReadonlyArray<{ id: string; vector: Float32Array; model: string }>): Promise<void> {
    const byId = new Map(vectors.map((entry) => [entry.id, entry]));
    // Not a change of content: the version stays (other processes see a new file and reload).
    return this.rewriteUser(userId, (records) => ({
      records: records.map((record) => {
        const replaced = byId.get(record.id);
        return replaced ? { ...record, vec: encodeVector(replaced.vector), model: replaced.model } : record;
      }),
      contentChanged: false,
    })).then(() => undefined);
  }

  /**
   * Rewrites the user's file with the memory's next version in place of the old one (under the
   * user's lock, like a delete), moved to the end with a new seq: the file stays in seq order and
   * a replica's refresh from its next seq sees it. The replaced version goes into the line's
   * `history`, so deleting the memory (a rewrite without its line) or the user (the folder) takes
   * its history off the disk with it.
   */
  async update(userId: string, id: string, patch: RecordPatch): Promise<UpdateResult | null> {
    const found: { updated?: { record: StoredRecord; previousSeq: number } } = {};
    const { previousVersion, version } = await this.rewriteUser(userId, (records, nextSeq) => {
      const old = records.find((record) => record.id === id);
      if (!old) return null;
      const record = patchedRecord(old, patch, nextSeq);
      const line: StoredRecord = { ...record, history: [...(old.history ?? []), versionOf(old)], vec: patch.vector ? encodeVector(patch.vector) : old.vec };
      found.updated = { record, previousSeq: old.seq };
      const event: ChangeDraft = { type: 'updated', at: patch.updatedAt, user_id: userId, memory_id: id, version: record.version ?? 1 };
      return { records: [...records.filter((other) => other !== old), line], contentChanged: true, seqsTaken: 1, events: [event] };
    });
    return found.updated ? { ...found.updated, previousVersion, version } : null;
  }

  /**
   * A batch that only adds is one append (and fsync), as a POST /mem is. One that also updates or
   * deletes is one rewrite of the user's file (temp file, fsync, rename), its adds at the end, so
   * a crash leaves the file before or after it. Either way the whole batch is durable before the
   * answer. A crash in the middle of an adds-only append (never acknowledged) leaves none of it:
   * its lines share a `batch_id` and their count, which a load checks as it checks an Add's.
   */
  async batch(userId: string, writes: readonly BatchWrite[]): Promise<BatchResult> {
    const drafts = writes.flatMap((write) => (write.kind === 'add' ? [write.draft] : []));
    if (drafts.length === writes.length) {
      // One id for the append, so that a crash in its middle drops all of it (incompleteAddStart).
      const appended = (await this.append(userId, drafts, { batchId: randomUUID() }))!;
      return { previousVersion: appended.previousVersion, version: appended.version, outcomes: appended.records.map((record) => ({ kind: 'added', record })) };
    }
    let plan: BatchPlan | undefined;
    const written = await this.rewriteUser(userId, (records, nextSeq) => {
      const byId = new Map(records.map((record) => [record.id, record]));
      plan = planBatch(writes, (id) => byId.get(id), nextSeq);
      if (plan.added.length === 0 && plan.updated.size === 0 && plan.removed.length === 0) return null;
      const gone = new Set([...plan.removed.map(({ id }) => id), ...plan.updated.keys()]);
      const lines = records.filter((record) => !gone.has(record.id));
      // Updated memories move to the end under their new seqs, then the adds: the file stays in seq order.
      const moved = [...plan.updated.values()].map(({ record, replaced, vector }) => {
        const old = byId.get(record.id)!;
        return { ...record, history: [...(old.history ?? []), ...replaced], vec: vector ? encodeVector(vector) : old.vec };
      });
      const added = plan.added.map(({ record, vector }) => ({ ...record, vec: encodeVector(vector) }));
      return {
        records: [...lines, ...[...moved, ...added].sort((a, b) => a.seq - b.seq)],
        contentChanged: true,
        seqsTaken: plan.seqsTaken,
        events: batchEvents(plan, userId, new Date().toISOString()),
      };
    });
    if (plan) return { ...written, outcomes: plan.outcomes };
    // No file for the user: nothing to update or delete, the adds alone.
    const appended = (await this.append(userId, drafts, { batchId: randomUUID() }))!;
    const records = appended.records.values();
    return { previousVersion: appended.previousVersion, version: appended.version, outcomes: writes.map((write) => (write.kind === 'add' ? { kind: 'added', record: records.next().value! } : { kind: 'missing' })) };
  }

  readChanges(after: number, limit: number, userId?: string): Promise<ChangeRead> {
    return this.changes.read(after, limit, userId);
  }

  lastChangeSeq(): Promise<number> {
    return this.changes.lastSeq();
  }

  pruneChanges(cutoffMs: number): Promise<number> {
    return this.changes.prune(cutoffMs);
  }

  /** Read without the lock unless the file needs repair, as a load is. */
  async history(userId: string, id: string): Promise<MemoryVersion[]> {
    const loaded = await this.readRepairing(userId, (repair) => this.files.load(userId, { repair }));
    return loaded.records.find((record) => record.id === id)?.history ?? [];
  }

  /**
   * Runs `task` as the only writer of the user's file, in this process (one task per user at a
   * time, in arrival order) and across processes (the user's lock file). Every read-modify-write
   * of the file runs inside: it must read the file inside too (`files.load` may repair it here).
   */
  withUserLock<T>(userId: string, task: () => Promise<T>): Promise<T> {
    return this.queue.run(userId, () => this.files.withUserLock(userId, task));
  }

  /** Rewrites the user's file without the matching memories. */
  private async removeWhere(userId: string, matches: (record: StoredRecord) => boolean, type: 'deleted' | 'expired' = 'deleted'): Promise<RemoveResult> {
    let removed: StoredRecord[] = [];
    const { previousVersion, version } = await this.rewriteUser(userId, (records) => {
      removed = records.filter(matches);
      if (removed.length === 0) return null;
      const at = new Date().toISOString();
      const events = removed.map((record): ChangeDraft => ({ type, at, user_id: userId, memory_id: record.id, version: null }));
      return { records: records.filter((record) => !matches(record)), contentChanged: true, events };
    });
    return { removed: removed.map(({ id, seq }) => ({ id, seq })), previousVersion, version };
  }

  /**
   * Every rewrite of a user's file (deletes, purges, updates, re-embedding): under the user's lock, the file read inside it (so an append of another process is
   * before the read, kept, or after the rename, in the new file), `change` applied to its records
   * (null: nothing to write), the seq floor written (a seq removed is never given again), then the
   * new file written and renamed in (temp file, fsync, rename). The version moves on when the
   * content changed. Records keep their seqs, but for those `change` gives the next seqs to (an
   * updated memory's new version), saying how many it took.
   */
  rewriteUser(
    userId: string,
    change: (records: readonly StoredRecord[], nextSeq: number) => { records: StoredRecord[]; contentChanged: boolean; seqsTaken?: number; events?: ChangeDraft[] } | null,
  ): Promise<WriteResult> {
    return this.withUserLock(userId, async () => {
      const loaded = await this.files.load(userId);
      const head = this.fromRead(userId, loaded, await this.files.seqFloor(userId));
      const previousVersion = head?.version ?? 0;
      const changed = head ? change(loaded.records, head.nextSeq) : null;
      if (!head || !changed) return { previousVersion, version: previousVersion };
      head.nextSeq += changed.seqsTaken ?? 0;
      await this.files.writeSeqFloor(userId, head.nextSeq);
      const stamp = await withSpan(STORE_REWRITE, { 'memorypool.store': 'jsonl', 'memorypool.store.records': changed.records.length }, () => this.files.rewrite(userId, changed.records));
      if (changed.events) await this.changes.append(changed.events);
      head.count = changed.records.length;
      if (changed.contentChanged) head.version = ++this.clock;
      head.offsets.clear();
      moveHead(head, stamp, Number(stamp.size));
      return { previousVersion, version: head.version };
    });
  }

  /** The whole file, read without the lock unless something needs repair; the head is set from that very read. */
  private async readUser(userId: string): Promise<UserSnapshot> {
    const loaded = await this.readRepairing(userId, (repair) => this.files.loadUnits(userId, { repair }));
    const head = this.fromRead(userId, loaded, await this.files.seqFloor(userId));
    const units: StoredUnit[] = loaded.records.map((record, i) => ({ record: cachedRecord(record), vector: loaded.vectors[i] }));
    return { version: head?.version ?? 0, units, release: loaded.release };
  }

  /** The head as of the file now: one stat when nothing changed (the common case), else a catch-up in the user's queue. */
  private async head(userId: string): Promise<Head | null> {
    const known = this.heads.get(userId);
    const stamp = this.files.stampNow(userId);
    if (known && stamp && sameStamp(known.file, stamp)) return known;
    // Not a file this store wrote: nothing to learn from it (the next write finds out what it is).
    if (stamp && !stamp.regular) return known ?? null;
    if (!known && !stamp) return null;
    return this.queue.run(userId, () => this.catchUp(userId, false));
  }

  /**
   * Brings the head up to the file (the caller is in the user's queue). `locked`: the caller holds
   * the user's lock, so an unfinished tail is a dead writer's, and the full read repairs it.
   */
  private async catchUp(userId: string, locked: boolean): Promise<Head | null> {
    const head = this.heads.get(userId);
    const stamp = await this.files.stamp(userId);
    if (!stamp) {
      this.heads.delete(userId);
      return null;
    }
    // A head read without the lock may stop short of an unfinished last line (a writer's append
    // under way, or a dead writer's torn one): current for a reader, not for a writer, who must
    // not append after that line but repair it first (below).
    if (head && sameStamp(head.file, stamp) && (!locked || stamp.size === BigInt(head.covered))) return head;
    if (!stamp.regular) return head ?? null;
    if (head && sameFile(head.file, stamp) && stamp.size >= BigInt(head.covered)) {
      const appended = await this.files.readAppended(userId, head.file, head.covered);
      if (appended && !(locked && appended.unfinished)) {
        if (appended.records.length > 0) admitToHead(head, appended.records, ++this.clock);
        moveHead(head, appended.stamp, appended.end);
        return head;
      }
    }
    const loaded = locked ? await this.files.load(userId) : await this.readRepairing(userId, (repair) => this.files.load(userId, { repair }));
    return this.fromRead(userId, loaded, await this.files.seqFloor(userId));
  }

  /**
   * A read of the user's file without the lock; when it finds something to repair (a dead
   * writer's torn line or half an Add: `read(false)` is null), the read again under the lock,
   * which repairs it, since only a holder of the lock may rewrite the file.
   */
  private async readRepairing<T>(userId: string, read: (repair: boolean) => Promise<T | null>): Promise<T> {
    return (await read(false)) ?? (await this.files.withUserLock(userId, async () => (await read(true)) as T));
  }

  /**
   * Sets the head from a whole read of the file: the version stays when the read found the file
   * the head already covered, else moves on. No head for a user without a file.
   */
  private fromRead(userId: string, loaded: LoadedUser, floor: number): Head | null {
    const known = this.heads.get(userId);
    if (!loaded.stamp) {
      this.heads.delete(userId);
      return null;
    }
    if (known && sameFile(known.file, loaded.stamp) && known.covered === loaded.bytes && known.count === loaded.records.length) {
      known.file = loaded.stamp;
      return known;
    }
    const head = newHead(loaded.records, ++this.clock, loaded.stamp, loaded.bytes, Math.max(floor, known?.nextSeq ?? 0));
    this.heads.set(userId, head);
    return head;
  }
}

/** Records read with their `vec` as units (vectors decoded, `vec` and `batch` dropped). */
function toUnits(records: readonly StoredRecord[]): StoredUnit[] {
  const vectors = decodeVectors(records.map((record) => record.vec));
  return records.map(({ vec: _vec, ...record }, i) => ({ record: withoutWriteMarks(record), vector: vectors[i] }));
}
