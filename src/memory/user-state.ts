import { UserCorpus } from '../retrieval/corpus/user-corpus.js';
import type { StoredRecord } from '../store/stored-record.js';
import { compactRecord, type SharedStrings } from './memory-records.js';
import { Mutex } from './mutex.js';
import { corpusUnit } from './corpus-units.js';

/** What a replica holds of one user: a cache of the store at `version`, searchable in memory. */
export interface UserState {
  userId: string;
  /** Orders this replica's writes of the user and the cache updates that follow them. */
  lock: Mutex;
  /**
   * Orders what mutates or writes the user's HNSW graph in the background: fill slices and cache
   * flushes. Apart from `lock`, so that a write waits neither for a slice nor for a graph being
   * written to disk (seconds at a million memories); the graph defers a write's changes meanwhile
   * (VectorIndex.write). Taken after `lock` when both are held, never before.
   */
  graphLock: Mutex;
  records: Map<string, StoredRecord>;
  bySeq: Map<number, StoredRecord>;
  requestIds: Set<string>;
  corpus: UserCorpus;
  nextSeq: number;
  /** The store's version this cache reflects; -1 once a write of another replica (or process) slipped in. */
  version: number;
  /** Characters of memory text held, for the cache's size estimate. */
  textChars: number;
  /** How many of the records have an `expires_at`: while none do, a search checks no expiry. */
  expiring: number;
  /** This user's share of the cache's estimate when last measured (0 outside the cache). */
  cacheBytes: number;
  indexDirty: boolean;
  flushTimer: NodeJS.Timeout | null;
  /** Set when the state left the cache (user deleted, evicted, reloaded); a writer holding it starts over. */
  retired: boolean;
  /** Settles when a background fill of the HNSW index has finished. */
  indexCompletion: Promise<void>;
}

export function emptyUserState(userId: string, version: number): UserState {
  return {
    userId,
    lock: new Mutex(),
    graphLock: new Mutex(),
    records: new Map(),
    bySeq: new Map(),
    requestIds: new Set(),
    corpus: new UserCorpus(),
    nextSeq: 0,
    version,
    textChars: 0,
    expiring: 0,
    cacheBytes: 0,
    indexDirty: false,
    flushTimer: null,
    retired: false,
    indexCompletion: Promise.resolve(),
  };
}

/**
 * Makes stored units searchable. The vector lives in the corpus only (a record never keeps
 * `vec`). A load passes `strings`, so that the user's records and terms share equal strings;
 * `deferIndex` leaves their HNSW inserts to `IndexLifecycle.indexLater` (an acknowledged write).
 */
export function admitUnits(
  state: UserState,
  units: ReadonlyArray<{ record: StoredRecord; vector: Float32Array | null }>,
  { strings, deferIndex = false }: { strings?: SharedStrings; deferIndex?: boolean } = {},
): void {
  // Stored features are read once, into the corpus unit; the record keeps none.
  const stored = units.map(({ record }) => record.fx);
  for (const { record } of units) {
    // Set to undefined, not deleted: `fx` sits mid-line, and deleting a property other than the
    // last turns the object into a slow dictionary (measured on every cached record of a store
    // written with features: +45 MiB at 10,000 users).
    if (record.fx !== undefined) record.fx = undefined;
    delete record.vec;
    delete record.batch;
    delete record.batch_id;
    delete record.history;
    if (strings) compactRecord(record, strings);
    state.records.set(record.id, record);
    state.bySeq.set(record.seq, record);
    if (record.request_id !== undefined) state.requestIds.add(record.request_id);
    state.nextSeq = Math.max(state.nextSeq, record.seq + 1);
    state.textChars += record.text.length;
    if (record.expires_at !== undefined) state.expiring++;
  }
  const corpusUnits = units.map(({ record, vector }, i) => corpusUnit(record, vector, strings, stored[i]));
  state.corpus.add(corpusUnits, deferIndex);
  // The BM25 index holds the terms now (each unit's distinct terms and counts); the list itself
  // (~150 bytes a unit) is never read again: these units are this state's own, never added twice.
  for (const unit of corpusUnits) unit.terms = NO_TERMS;
}

const NO_TERMS: readonly string[] = Object.freeze([]);

/** Drops memories from the records and every index. */
export function dropUnits(state: UserState, removed: ReadonlyArray<{ id: string; seq: number }>): void {
  for (const { id } of removed) {
    const record = state.records.get(id);
    if (!record) continue;
    state.records.delete(id);
    state.bySeq.delete(record.seq);
    state.corpus.remove(record.seq);
    state.textChars -= record.text.length;
    if (record.expires_at !== undefined) state.expiring--;
  }
}

/** A user's records in the order they were written. */
export function inStoredOrder(state: UserState): StoredRecord[] {
  return [...state.bySeq.values()].sort((a, b) => a.seq - b.seq);
}
