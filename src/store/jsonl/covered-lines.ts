import type { Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import type { StoredRecord } from '../stored-record.js';
import { vectorAt, type VectorSidecar } from '../vector-sidecar.js';
import { readRecordLines } from './record-lines.js';

/**
 * The lines of a memories file that its vector sidecar covers, read a piece at a time through a
 * buffer kept for the next load, each piece handed to the sidecar's digest and parsed (its `vec`
 * cut out) while it is in the cache. A large user's file read into a buffer of its own is memory
 * fresh from the OS, which costs more to touch than the parse: on the 2-vCPU dev VM a 64 MB file
 * (20,000 memories) read whole and hashed took 325-345 ms, read in 4 MB pieces through one buffer
 * 70-83 ms, and a fresh buffer's first touch ~3 ms a MB (CHANGELOG.md, "Large users load in pieces").
 */

/** Bytes a piece holds; a line longer than that (a memory of about a megabyte) gets a larger buffer for its load. */
const PIECE_BYTES = 1 << 20;
/** Buffers kept for reuse: more loads at once than this take a new one each. */
const SPARE_PIECES = 2;
const spare: Buffer[] = [];

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
  let buffer = spare.pop() ?? Buffer.allocUnsafeSlow(PIECE_BYTES);
  const pooled = buffer;
  try {
    // `filled` bytes of the buffer are read and not yet parsed: the start of a line the last piece cut.
    let filled = 0;
    for (let read = 0; read < sidecar.covered; ) {
      if (filled === buffer.length) {
        const larger = Buffer.allocUnsafeSlow(buffer.length * 2);
        buffer.copy(larger, 0, 0, filled);
        buffer = larger;
      }
      const { bytesRead } = await handle.read(buffer, filled, Math.min(buffer.length - filled, sidecar.covered - read), read);
      if (bytesRead === 0) return null;
      digest.update(buffer.subarray(filled, filled + bytesRead));
      read += bytesRead;
      filled += bytesRead;
      // Whole lines only; the covered bytes end with one (a sidecar covers whole lines, or it is not this file's).
      const end = read === sidecar.covered ? filled : buffer.lastIndexOf(0x0a, filled - 1) + 1;
      if (read === sidecar.covered && buffer[filled - 1] !== 0x0a) return null;
      if (end === 0) continue;
      if (!readRecordLines(buffer, 0, end, userId, true, sink)) return null;
      buffer.copy(buffer, 0, end, filled);
      filled -= end;
    }
    return records.length === sidecar.count ? { records, vectors } : null;
  } finally {
    if (spare.length < SPARE_PIECES) spare.push(pooled);
  }
}
