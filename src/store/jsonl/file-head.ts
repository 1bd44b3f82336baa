import type { StoredRecord } from '../stored-record.js';
import type { FileStamp } from './file-stamp.js';

/**
 * What the store knows of a user's memories file, so that a write needs no read of it and a
 * request learns whether anything changed from one stat.
 */
export interface Head {
  nextSeq: number;
  requestIds: Set<string>;
  count: number;
  version: number;
  /** The file as last seen, and how many of its bytes (whole lines) the head covers. */
  file: FileStamp;
  covered: number;
  /**
   * Where in the file the records of seq >= key begin, for the last few points the head moved
   * through: a replica asking for the seqs since one of them reads only what follows.
   */
  offsets: Map<number, number>;
}

/** Points kept in `Head.offsets` (a replica more writes behind than this reloads the user). */
const OFFSETS_KEPT = 64;

/** The head of a file read whole: `records` are all of it, up to `covered` bytes; seqs start at `floor` at least. */
export function newHead(records: readonly StoredRecord[], version: number, file: FileStamp, covered: number, floor: number): Head {
  const nextSeq = records.reduce((max, record) => Math.max(max, record.seq + 1), floor);
  return {
    nextSeq,
    requestIds: new Set(records.flatMap((record) => (record.request_id === undefined ? [] : [record.request_id]))),
    count: records.length,
    version,
    file,
    covered,
    offsets: new Map([[nextSeq, covered]]),
  };
}

/** Takes records appended to the file (by any process) into the head, at `version`. */
export function admitToHead(head: Head, records: readonly StoredRecord[], version: number): void {
  for (const record of records) {
    head.nextSeq = Math.max(head.nextSeq, record.seq + 1);
    if (record.request_id !== undefined) head.requestIds.add(record.request_id);
  }
  head.count += records.length;
  head.version = version;
}

/** The head now covers the file up to `covered` bytes, as `stamp` saw it. */
export function moveHead(head: Head, stamp: FileStamp, covered: number): void {
  head.file = stamp;
  head.covered = covered;
  head.offsets.set(head.nextSeq, covered);
  if (head.offsets.size > OFFSETS_KEPT) head.offsets.delete(head.offsets.keys().next().value!);
}
