import { open, type FileHandle } from 'node:fs/promises';
import { decodeVectors, type StoredRecord } from '../stored-record.js';
import { checkSidecar, SIDECAR_HEADER_BYTES, sidecarHeader, VECTOR_SIDECAR_FILE, vectorAt, type VectorSidecar } from '../vector-sidecar.js';
import type { UserLayout } from './layout.js';
import { countLines } from './line-scanner.js';
import { parseRepairing, readInto, readMemories, type LoadedUser } from './load-records.js';
import { incompleteAddStart, parseLines, readRecordLines } from './record-lines.js';
import type { SidecarWriter } from './sidecar-writer.js';

/** A user's records (without `vec`) and, in the same order, their vectors (null where a line has none). */
export interface LoadedUnits extends LoadedUser {
  vectors: Array<Float32Array | null>;
  /**
   * Frees the one slab most of `vectors` are views of (the sidecar's bytes, or the vectors decoded
   * from the JSONL) at once, once a sidecar write under way from it is done; every view of it
   * reads as empty from then on. For a caller that holds none of them any more (a user whose
   * vectors went into int8 codes: 2 KB a memory that V8 would free only at its next full
   * collection, seconds to minutes later, measured in bench/memory-parts.ts). Absent when no slab was made.
   */
  release?: () => void;
}

type Units = Pick<LoadedUnits, 'records' | 'vectors'> & { slab?: ArrayBuffer };

/**
 * A user of fewer memories gets an ordinary ArrayBuffer as its slab, which `release` leaves to
 * the collector. A resizable one is memory fresh from the OS, whose first writes cost more than a
 * small user's whole decode (a 2 KB vector base64-decoded into it 7-10 µs, against 0.3-0.6 into
 * an ordinary one, measured on Node 20 and 24); and only a user far larger than this keeps a
 * graph and int8 codes, so that `release` would free anything early.
 */
const RELEASABLE_MIN_MEMORIES = 256;

/** A zeroed buffer of `size` bytes for the vectors of `memories` memories: for a large user, one whose memory `release` gives back at once (a resizable ArrayBuffer shrunk to 0). */
function releasableBuffer(size: number, memories: number): { bytes: Buffer; slab: ArrayBuffer } {
  const slab = memories < RELEASABLE_MIN_MEMORIES
    ? new ArrayBuffer(size)
    : new (ArrayBuffer as unknown as new (size: number, options: { maxByteLength: number }) => ArrayBuffer)(size, { maxByteLength: size });
  return { bytes: Buffer.from(slab, 0, size), slab };
}

/** `release` of a load's slab: after the user's sidecar write under way, which may be encoding from it. */
function releaser(sidecars: SidecarWriter, userId: string, slab: ArrayBuffer | undefined): (() => void) | undefined {
  if (!slab || !(slab as unknown as { resizable: boolean }).resizable) return undefined;
  return () => {
    const free = () => (slab as unknown as { resize(size: number): void }).resize(0);
    const writing = sidecars.inFlight(userId);
    if (writing) void writing.then(free);
    else free();
  };
}

/**
 * Reads a user's memories with their vectors decoded (records come without `vec`), for a load
 * into memory. Vectors of the lines the binary sidecar covers are views of it and those lines are
 * parsed with their base64 cut out; the rest is decoded. Whenever the sidecar does not prove
 * current, the whole file is read with each vector decoded as its line is; and anything unusual
 * (a line to quarantine) takes the plain path of `parseRepairing`. A new sidecar is written in
 * the background when the one there is missing or far behind.
 */
export async function loadUnits(layout: UserLayout, sidecars: SidecarWriter, userId: string, repair: boolean): Promise<LoadedUnits | null> {
  const read = await readMemories(layout, userId, { atOnce: true });
  if (!read) return { records: [], vectors: [], quarantined: 0, stamp: null, bytes: 0 };
  // A sidecar is written for a user of `minRecords` memories or more (a rewrite removes it), so a
  // file of fewer lines has none that could prove current: not looking spares a small user's load
  // an open that fails (~0.1 ms of the ~1.3 a cold user of 30 memories cost, bench/cold-user-load.ts).
  const sidecar = countLines(read.content, sidecars.minRecords) >= sidecars.minRecords ? await readSidecar(layout, userId, read.content) : null;
  const fast = sidecar ? parseWithSidecar(read.content, userId, sidecar.sidecar) : null;
  if (fast) {
    const tail = fast.records.length - sidecar!.sidecar.count;
    if (tail >= Math.max(sidecars.minRecords, sidecar!.sidecar.count / 8)) sidecars.refresh(userId, read, fast.records, fast.vectors);
    return { records: fast.records, vectors: fast.vectors, quarantined: 0, stamp: read.stamp, bytes: read.content.length, release: releaser(sidecars, userId, sidecar!.slab) };
  }
  const decoded = parseDecoding(read.content, userId);
  if (decoded) {
    if (decoded.records.length >= sidecars.minRecords) sidecars.refresh(userId, read, decoded.records, decoded.vectors);
    return { records: decoded.records, vectors: decoded.vectors, quarantined: 0, stamp: read.stamp, bytes: read.content.length, release: releaser(sidecars, userId, decoded.slab) };
  }
  const loaded = await parseRepairing(layout, sidecars, userId, read, repair);
  if (!loaded) return null;
  const vectors = decodeVectors(loaded.records.map((record) => record.vec));
  const records = loaded.records.map(({ vec: _vec, ...record }) => record);
  // After a quarantine the file was rewritten: the next load builds the sidecar from that file.
  if (loaded.quarantined === 0 && records.length >= sidecars.minRecords) sidecars.refresh(userId, read, records, vectors);
  return { ...loaded, records, vectors };
}

/** The sidecar when it proves to be built from this very file (read into a slab `release` can free), else null (the reason logged). */
async function readSidecar(layout: UserLayout, userId: string, content: Buffer): Promise<{ sidecar: VectorSidecar; slab: ArrayBuffer } | null> {
  let read: { bytes: Buffer; slab: ArrayBuffer };
  let handle: FileHandle | undefined;
  try {
    handle = await open(layout.userFile(userId, VECTOR_SIDECAR_FILE), 'r');
    // The header's count picks the slab's kind: no scan of the memories file on this, the fast path.
    const count = sidecarHeader(await readInto(handle, Buffer.alloc(SIDECAR_HEADER_BYTES)))?.count ?? 0;
    const buffer = releasableBuffer((await handle.stat()).size, count);
    read = { bytes: await readInto(handle, buffer.bytes), slab: buffer.slab };
  } catch {
    return null;
  } finally {
    await handle?.close().catch(() => undefined);
  }
  const checked = checkSidecar(read.bytes, content);
  if (checked.status === 'valid') return { sidecar: checked.sidecar, slab: read.slab };
  layout.logger.info({ user_dir: layout.userDir(userId), reason: checked.reason }, 'vector sidecar not used: decoding the vectors from the memories file');
  return null;
}

/**
 * The covered lines parsed without their `vec` (cut out of the bytes before decoding, so its
 * string is never built), each checked against the sidecar's seq; the lines after it as usual.
 * Null when anything does not fit, so the caller reads the file another way.
 */
function parseWithSidecar(content: Buffer, userId: string, sidecar: VectorSidecar): Units | null {
  const records: StoredRecord[] = [];
  const vectors: Array<Float32Array | null> = [];
  // The sidecar covers whole lines only (checked), so none of them is torn.
  const fits = readRecordLines(content, 0, sidecar.covered, userId, true, {
    record: ({ record, vec }) => {
      const index = records.length;
      if (vec === null || index >= sidecar.count || sidecar.seqs[index] !== record.seq) return false;
      records.push(record);
      vectors.push(vectorAt(sidecar, index));
      return true;
    },
    reject: () => false,
  });
  if (!fits || records.length !== sidecar.count) return null;
  const tail = parseLines(content, sidecar.covered, content.length, userId);
  if (tail.rejected.length > 0) return null;
  const tailVectors = decodeVectors(tail.records.map((record) => record.vec));
  for (const [i, { vec: _vec, ...record }] of tail.records.entries()) {
    records.push(record);
    vectors.push(tailVectors[i]);
  }
  // An Add cut short: the plain path decides what to quarantine.
  if (incompleteAddStart(records) !== -1) return null;
  return { records, vectors };
}

/**
 * The whole file parsed with each line's `vec` decoded into one slab as the line is read (its
 * base64 is cut out of the line and decoded at once), for a load without a usable sidecar.
 * Parsing every record with its `vec` first held all the vectors' 2.7 KB strings at once:
 * 2.7 GB of heap at a million memories, past V8's default limit. Null when any line is unusual
 * (torn, malformed, another user's, a vector of another size, an Add cut short): the plain
 * path then decides what to quarantine.
 */
function parseDecoding(content: Buffer, userId: string): Units | null {
  if (content.length > 0 && content[content.length - 1] !== 0x0a) return null;
  const lines = countLines(content);
  const records: StoredRecord[] = [];
  const vectors: Array<Float32Array | null> = [];
  let slab: Buffer | null = null;
  let backing: ArrayBuffer | undefined;
  let floats: Float32Array | null = null;
  let bytes = 0;
  const fits = readRecordLines(content, 0, content.length, userId, true, {
    record: ({ record, vec }) => {
      records.push(record);
      if (!vec) {
        vectors.push(null);
        return true;
      }
      const base64 = content.toString('latin1', vec.value, vec.close);
      const length = Buffer.byteLength(base64, 'base64');
      if (slab === null) {
        if (length === 0 || length % 4 !== 0) return false;
        bytes = length;
        ({ bytes: slab, slab: backing } = releasableBuffer(bytes * lines, lines));
        floats = new Float32Array(slab.buffer, slab.byteOffset, slab.length / 4);
      }
      const at = records.length - 1;
      if (length !== bytes || slab.write(base64, at * bytes, bytes, 'base64') !== bytes) return false;
      vectors.push(floats!.subarray((at * bytes) / 4, ((at + 1) * bytes) / 4));
      return true;
    },
    reject: () => false,
  });
  if (!fits || incompleteAddStart(records) !== -1) return null;
  return { records, vectors, slab: backing };
}
