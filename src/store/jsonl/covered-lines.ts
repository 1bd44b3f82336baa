import type { Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { StoredRecord } from '../stored-record.js';
import { vectorAt, type VectorSidecar } from '../vector-sidecar.js';
import { readLines } from './file-pieces.js';
import { readRecordLines } from './record-lines.js';

/**
 * The lines of a memories file that its vector sidecar covers, read a piece at a time
 * (file-pieces.ts), each piece handed to the sidecar's digest and parsed (its `vec` cut out)
 * while it is in the cache.
 */

export interface CoveredLines {
  records: StoredRecord[];
  /** The sidecar's vectors, in the records' order (views of its slab). */
  vectors: Float32Array[];
}

/**
 * Reads bytes [0, covered) of the file behind `handle` into `digest` and parses them as the
 * sidecar's lines: every line a memory of `userId` with its `vec`, the seq the sidecar has for
 * it, as many lines as it has vectors, the last one ending at `covered`. Null when anything does
 * not fit (or the file is shorter); the caller still checks the digest before trusting the vectors.
 */
export async function readCoveredLines(handle: FileHandle, sidecar: VectorSidecar, userId: string, digest: Hash): Promise<CoveredLines | null> {
  const records: StoredRecord[] = [];
  const vectors: Float32Array[] = [];
  const sink = {
    record: ({ record, vec }: { record: StoredRecord; vec: unknown }): boolean => {
      const index = records.length;
      if (vec === null || index >= sidecar.count || sidecar.seqs[index] !== record.seq) return false;
      records.push(record);
      vectors.push(vectorAt(sidecar, index));
      return true;
    },
    reject: (): boolean => false,
  };
  const read = await readLines(handle, 0, sidecar.covered, {
    bytes: (piece) => digest.update(piece),
    lines: (buffer, end) => readRecordLines(buffer, 0, end, userId, true, sink),
  });
  // The covered bytes end with a line's newline (a sidecar covers whole lines, or it is not this file's).
  return read.status === 'read' && read.unfinished === 0 && records.length === sidecar.count ? { records, vectors } : null;
}
