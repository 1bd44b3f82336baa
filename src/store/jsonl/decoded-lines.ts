import type { FileHandle } from 'node:fs/promises';
import type { Hash } from 'node:crypto';
import type { StoredRecord } from '../stored-record.js';
import { readLines } from './file-pieces.js';
import { countLines, type VecMember } from './line-scanner.js';
import { incompleteAddStart, readRecordLines, type RecordLineSink } from './record-lines.js';

/**
 * A user's lines parsed with each line's `vec` decoded into one slab as the line is read (its
 * base64 cut out of the bytes and decoded at once), for a load without a sidecar that fits: the
 * file read whole (`parseDecoding`) or, when large, in pieces (`readDecodedLines`). Parsing every
 * record with its `vec` first held all the vectors' 2.7 KB strings at once: 2.7 GB of heap at a
 * million memories, past V8's default limit.
 */

/**
 * A user of fewer memories gets an ordinary ArrayBuffer as its slab, which `release` leaves to
 * the collector. A resizable one is memory fresh from the OS, whose first writes cost more than a
 * small user's whole decode (a 2 KB vector base64-decoded into it 7-10 µs, against 0.3-0.6 into
 * an ordinary one, measured on Node 20 and 24); and only a user far larger than this keeps a
 * graph and int8 codes, so that `release` would free anything early.
 */
const RELEASABLE_MIN_MEMORIES = 256;

/** A zeroed buffer of `size` bytes for the vectors of `memories` memories: for a large user, one whose memory `release` gives back at once (a resizable ArrayBuffer shrunk to 0). */
export function releasableBuffer(size: number, memories: number): { bytes: Buffer; slab: ArrayBuffer } {
  const slab = memories < RELEASABLE_MIN_MEMORIES
    ? new ArrayBuffer(size)
    : new (ArrayBuffer as unknown as new (size: number, options: { maxByteLength: number }) => ArrayBuffer)(size, { maxByteLength: size });
  return { bytes: Buffer.from(slab, 0, size), slab };
}

/** A user's records and, in the same order, their vectors (null where a line has none), one slab behind them. */
export interface DecodedLines {
  records: StoredRecord[];
  vectors: Array<Float32Array | null>;
  slab?: ArrayBuffer;
}

/** Takes lines' records and decodes their vectors into a slab sized for `lines` of them. */
class SlabDecoder {
  readonly records: StoredRecord[] = [];
  readonly vectors: Array<Float32Array | null> = [];
  backing: ArrayBuffer | undefined;
  private slab: Buffer | null = null;
  private floats: Float32Array | null = null;
  private bytes = 0;

  constructor(private readonly lines: number) {}

  /** A walk's sink over `content`, the bytes its lines' offsets are in. */
  sink(content: Buffer): RecordLineSink {
    return { record: ({ record, vec }) => this.take(content, record, vec), reject: () => false };
  }

  private take(content: Buffer, record: StoredRecord, vec: VecMember | null): boolean {
    this.records.push(record);
    if (!vec) {
      this.vectors.push(null);
      return true;
    }
    const base64 = content.toString('latin1', vec.value, vec.close);
    const length = Buffer.byteLength(base64, 'base64');
    if (this.slab === null) {
      if (length === 0 || length % 4 !== 0) return false;
      this.bytes = length;
      ({ bytes: this.slab, slab: this.backing } = releasableBuffer(length * this.lines, this.lines));
      this.floats = new Float32Array(this.slab.buffer, this.slab.byteOffset, this.slab.length / 4);
    }
    const at = this.records.length - 1;
    if (length !== this.bytes || at >= this.lines || this.slab.write(base64, at * length, length, 'base64') !== length) return false;
    this.vectors.push(this.floats!.subarray((at * length) / 4, ((at + 1) * length) / 4));
    return true;
  }

  /** The lines decoded, or null when an Add was cut short (the plain path decides what to quarantine). */
  result(): DecodedLines | null {
    return incompleteAddStart(this.records) !== -1 ? null : { records: this.records, vectors: this.vectors, slab: this.backing };
  }
}

/**
 * The whole file decoded. Null when any line is unusual (torn, malformed, another user's, a vector
 * of another size, an Add cut short): the plain path then decides what to quarantine.
 */
export function parseDecoding(content: Buffer, userId: string): DecodedLines | null {
  if (content.length > 0 && content[content.length - 1] !== 0x0a) return null;
  const decoder = new SlabDecoder(countLines(content));
  return readRecordLines(content, 0, content.length, userId, true, decoder.sink(content)) ? decoder.result() : null;
}

/**
 * The bytes [0, size) of the file behind `handle` decoded as `parseDecoding` does, read in pieces
 * twice (file-pieces.ts): the lines counted (the slab's size, ~1 ms a megabyte), then parsed, the
 * bytes handed to `digest` (a new sidecar's) as they are read. Null as `parseDecoding` is.
 */
export async function readDecodedLines(handle: FileHandle, size: number, userId: string, digest: Hash): Promise<DecodedLines | null> {
  let lines = 0;
  const counted = await readLines(handle, 0, size, {
    lines: (buffer, end) => {
      lines += countLines(buffer.subarray(0, end));
      return true;
    },
  });
  if (counted.status !== 'read' || counted.unfinished !== 0) return null;
  const decoder = new SlabDecoder(lines);
  const read = await readLines(handle, 0, size, {
    bytes: (piece) => digest.update(piece),
    lines: (buffer, end) => readRecordLines(buffer, 0, end, userId, true, decoder.sink(buffer)),
  });
  return read.status === 'read' && read.unfinished === 0 ? decoder.result() : null;
}
