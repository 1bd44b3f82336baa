import type { Hash } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { decodeVectors, type StoredRecord } from '../stored-record.js';
import { vectorAt, type VectorSidecar } from '../vector-sidecar.js';
import { readLines } from './file-pieces.js';
import { incompleteAddStart, parseLines, readRecordLines, type RecordLineSink } from './record-lines.js';

/**
 * The lines of a memories file that its vector sidecar covers, parsed without their `vec` (cut out
 * of the bytes before decoding, so its string is never built), each checked against the
 * sidecar's seq; the lines after them as usual. A large file's are read a piece at a time
 * (file-pieces.ts), each piece handed to the sidecar's digest and parsed while in the cache.
 */

export interface CoveredLines {
  records: StoredRecord[];
  /** In the records' order: the covered lines' the sidecar's (views of its slab), the lines' after them decoded. */
  vectors: Array<Float32Array | null>;
}

/**
 * A walk's sink that takes the lines a sidecar covers: each a memory with its `vec` and the seq
 * the sidecar has at its place, its vector the sidecar's; `lines` holds what it took.
 */
export function coveredSink(sidecar: VectorSidecar): { sink: RecordLineSink; lines: CoveredLines } {
  const lines: CoveredLines = { records: [], vectors: [] };
  const sink: RecordLineSink = {
    record: ({ record, vec }) => {
      const index = lines.records.length;
      if (vec === null || index >= sidecar.count || sidecar.seqs[index] !== record.seq) return false;
      lines.records.push(record);
      lines.vectors.push(vectorAt(sidecar, index));
      return true;
    },
    reject: () => false,
  };
  return { sink, lines };
}

/**
 * Adds the lines after the covered ones (`content[from, to)`) to `lines`, their vectors decoded.
 * False when one of them is unusual or the last Add was cut short: the plain path decides what to quarantine.
 */
export function addTail(lines: CoveredLines, content: Buffer, from: number, to: number, userId: string): boolean {
  const tail = parseLines(content, from, to, userId);
  if (tail.rejected.length > 0) return false;
  const tailVectors = decodeVectors(tail.records.map((record) => record.vec));
  for (const [i, { vec: _vec, ...record }] of tail.records.entries()) {
    lines.records.push(record);
    lines.vectors.push(tailVectors[i]);
  }
  return incompleteAddStart(lines.records) === -1;
}

/**
 * Reads bytes [0, covered) of the file behind `handle` into `digest` and parses them as the
 * sidecar's lines (`coveredSink`), as many as it has vectors, the last one ending at `covered`.
 * Null when anything does not fit (or the file is shorter); the caller still checks the digest
 * before trusting the vectors.
 */
export async function readCoveredLines(handle: FileHandle, sidecar: VectorSidecar, userId: string, digest: Hash): Promise<CoveredLines | null> {
  const { sink, lines } = coveredSink(sidecar);
  const read = await readLines(handle, 0, sidecar.covered, {
    bytes: (piece) => digest.update(piece),
    lines: (buffer, end) => readRecordLines(buffer, 0, end, userId, true, sink),
  });
  // The covered bytes end with a line's newline (a sidecar covers whole lines, or it is not this file's).
  return read.status === 'read' && read.unfinished === 0 && lines.records.length === sidecar.count ? lines : null;
}
