import type { MemoryVersion } from '../domain/memory.js';
import type { RecordPatch, StoredRecord } from './stored-record.js';
import type { IndexCacheFiles } from './vector-index-cache.js';
import type { WebhookStateStore } from './webhook-state.js';

/**
 * The one boundary between the service and stored data. Two implementations: the JSONL data
 * directory (the embedded default) and PostgreSQL (shared by any number of replicas). The
 * service keeps no truth of its own: the store assigns each user's sequence numbers inside the
 * write, checks an Add's request id in the same write (first write wins), and exposes a per-user
 * version that changes on every append or delete, so a replica can tell cheaply whether what it
 * has cached is still current.
 */
export interface MemoryStore {
  readonly kind: 'jsonl' | 'postgres';
  /** Where the data lives, for logs (a directory, or a URL without its password). */
  readonly location: string;
  /** Where per-user HNSW caches may be kept; null when the store keeps none (they are rebuilt on load). */
  readonly indexCache: IndexCacheFiles | null;
  /** Each webhook's delivery progress and lease, beside the change feed it follows (webhook-state.ts). */
  readonly webhooks: WebhookStateStore;

  init(): Promise<void>;
  close(): Promise<void>;

  /** Every user with something stored (or a folder / row left behind), sorted. */
  listUsers(): Promise<string[]>;
  /** Memories stored in all, without loading any user into a cache. */
  countMemories(): Promise<number>;
  /** Users with at least one memory stored, without loading any user into a cache. */
  countUsers(): Promise<number>;
  /**
   * How many memories the user has stored (expired ones included), without loading the user and
   * cheaply: what a write checks before it writes to a user no cache holds (append-units.ts).
   */
  storedCount(userId: string): Promise<number>;
  /** How many memories and distinct sessions the user has stored, without loading the user; with `nowMs`, those expired by then left out. */
  userCounts(userId: string, nowMs?: number): Promise<{ count: number; sessions: number }>;
  /** Bytes the user's memories take in storage (files, or table rows). */
  storedBytes(userId: string): Promise<number>;
  /**
   * Every user with a memory stored as of `nowMs` (expired ones left out), sorted by id, with
   * `userCounts` and `storedBytes` of each, at once and without loading anyone: what /mem/stats
   * lists. Kept between calls, so a call reads only the users written since the last.
   */
  poolFigures(nowMs: number): Promise<PoolFigure[]>;

  /** A user's memories in stored order with their vectors; version 0 and no units for an unknown user. */
  load(userId: string): Promise<UserSnapshot>;
  /** The user's high-water mark: changes on every append and delete, never repeats; 0 for a user never written. */
  version(userId: string): Promise<number>;
  /** Memories with `seq >= fromSeq`, the current version and the current count, read at one instant. */
  changesSince(userId: string, fromSeq: number): Promise<UserChanges>;
  /** Whether an Add with this request id is already stored (a cheap early answer; `append` decides). */
  hasRequest(userId: string, requestId: string): Promise<boolean>;

  /**
   * Stores the units in one write and returns them with the seqs the store assigned. With a
   * request id, the write stores nothing and returns null when that id is already stored.
   * Returns only once durable (fsync / commit).
   */
  append(userId: string, drafts: readonly UnitDraft[], options?: { requestId?: string }): Promise<AppendResult | null>;
  /**
   * Replaces one memory by its next version in one durable write (`patchedRecord`: a new seq, the
   * memory's version + 1), the replaced version kept in its history; the user's version moves as
   * for any write. Null when the user holds no memory of that id.
   */
  update(userId: string, id: string, patch: RecordPatch): Promise<UpdateResult | null>;
  /** The versions an update replaced, oldest first (empty for a memory never updated, or unknown). */
  history(userId: string, id: string): Promise<MemoryVersion[]>;
  /**
   * Deletes these memories, their history with them (ids the user does not hold are ignored).
   * `expired`: the expiry sweep's removal, named so in the change feed.
   */
  remove(userId: string, ids: readonly string[], options?: { expired?: boolean }): Promise<RemoveResult>;
  /** Deletes the user's memories stored (ingested) before the cutoff. */
  removeOlderThan(userId: string, cutoffMs: number): Promise<RemoveResult>;
  /**
   * Applies a batch's writes in order (an update or delete of an id the user does not hold, or
   * no longer holds by then, is `missing` and changes nothing) in one durable write: the JSONL
   * store one append and fsync when the batch only adds, else one rewrite of the user's file;
   * PostgreSQL one transaction. The user's version moves once.
   */
  batch(userId: string, writes: readonly BatchWrite[]): Promise<BatchResult>;
  /** Removes everything stored for a user, request ids included; returns how many memories it held. */
  deleteUser(userId: string): Promise<number>;
  /** Replaces stored vectors after the embedding model changed (not a change of content: the version stays; no change event). */
  replaceVectors(userId: string, vectors: ReadonlyArray<{ id: string; vector: Float32Array; model: string }>): Promise<void>;

  /**
   * The change feed: every write above but `replaceVectors` records its events in the same
   * durable write, numbered by one counter for the whole store (every user, every process or
   * replica), in commit order. The events after `after`, at most `limit`, only `userId`'s if given.
   */
  readChanges(after: number, limit: number, userId?: string): Promise<ChangeRead>;
  /** The newest event's seq (0 before the first): a cheap poll for a long poll to wake on. */
  lastChangeSeq(): Promise<number>;
  /** Drops events older than the cutoff (the newest event always stays: the counter goes on from it); returns how many went. */
  pruneChanges(cutoffMs: number): Promise<number>;
}

export interface PoolFigure {
  userId: string;
  count: number;
  sessions: number;
  bytes: number;
}

export type ChangeType = 'added' | 'updated' | 'deleted' | 'expired' | 'user_deleted';

/**
 * An event as stored: no text, nothing of the memory but its id and version, so that deleting a
 * memory or a user leaves none of what it said in the feed. The service joins the memory (as it
 * was at that version) when it answers.
 */
export interface ChangeEvent {
  seq: number;
  type: ChangeType;
  /** When the write was made (ISO 8601). */
  at: string;
  user_id: string;
  /** Null for `user_deleted`. */
  memory_id: string | null;
  /** The memory's version the write left (added, updated); null for deletions. */
  version: number | null;
}

/** An event before the store numbers it. */
export type ChangeDraft = Omit<ChangeEvent, 'seq'>;

export interface ChangeRead {
  events: ChangeEvent[];
  /** The seq the scan reached: the next read starts after it (past events of other users it skipped too). */
  scanned: number;
  /** The oldest cursor still answerable: every event after it is held (0 while nothing was ever pruned). */
  oldest: number;
  /** The newest event's seq. */
  last: number;
}

/** A unit ready to store: everything but the seq, which the store assigns. */
export interface UnitDraft {
  record: Omit<StoredRecord, 'seq' | 'vec' | 'batch'>;
  vector: Float32Array;
}

/** A stored unit. `record.vec` is never set here; the vector travels beside it (null when missing). */
export interface StoredUnit {
  record: StoredRecord;
  vector: Float32Array | null;
}

export interface UserSnapshot {
  version: number;
  units: StoredUnit[];
  /**
   * Frees the memory behind the units' vectors at once (the JSONL store's one slab; absent for a
   * store that has none): every vector of the snapshot reads as empty from then on. Call it only
   * once nothing holds them; left uncalled, the garbage collector frees them in its own time.
   */
  release?: () => void;
}

export interface UserChanges {
  version: number;
  count: number;
  units: StoredUnit[];
}

export interface WriteResult {
  /** The version before and after this write: equal when the write changed nothing. */
  previousVersion: number;
  version: number;
}

export interface AppendResult extends WriteResult {
  records: StoredRecord[];
}

export interface UpdateResult extends WriteResult {
  /** The new version, under its new seq. */
  record: StoredRecord;
  /** The seq the memory had before. */
  previousSeq: number;
}

export interface RemoveResult extends WriteResult {
  removed: Array<{ id: string; seq: number }>;
}

/** One write of a batch, as the store applies it. */
export type BatchWrite = { kind: 'add'; draft: UnitDraft } | { kind: 'update'; id: string; patch: RecordPatch } | { kind: 'remove'; id: string };

/** What each write of a batch did, in the order given. */
export type BatchOutcome =
  | { kind: 'added'; record: StoredRecord }
  | { kind: 'updated'; record: StoredRecord; previousSeq: number }
  | { kind: 'removed'; id: string; seq: number }
  | { kind: 'missing' };

export interface BatchResult extends WriteResult {
  outcomes: BatchOutcome[];
}
