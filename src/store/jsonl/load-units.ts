import type { BigIntStats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { decodeVectors } from '../stored-record.js';
import { checkSidecar, digestMatches, frameSidecar, SIDECAR_HEADER_BYTES, SIDECAR_REFUSALS, sidecarHeader, startDigest, VECTOR_SIDECAR_FILE, type VectorSidecar } from '../vector-sidecar.js';
import { addTail, coveredSink, readCoveredLines, type CoveredLines } from './covered-lines.js';
import { parseDecoding, readDecodedLines, releasableBuffer } from './decoded-lines.js';
import { stampOf } from './file-stamp.js';
import type { UserLayout } from './layout.js';
import { countLines } from './line-scanner.js';
import { parseRepairing, readInto, readMemories, readMemoriesNow, type LoadedUser } from './load-records.js';
import { readRecordLines } from './record-lines.js';
import { wholeSource, type SidecarWriter } from './sidecar-writer.js';

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
 * current, each vector is decoded as its line is read; and anything unusual (a line to
 * quarantine) takes the plain path of `parseRepairing`. A file past READ_AT_ONCE_MAX_BYTES is read
 * in pieces (`loadLarge`), never whole, unless its tail is long enough for a new sidecar or
 * something in it is unusual. A new sidecar is written in the background when the one there is
 * missing or far behind.
 */
export async function loadUnits(layout: UserLayout, sidecars: SidecarWriter, userId: string, repair: boolean): Promise<LoadedUnits | null> {
  const now = readMemoriesNow(layout, userId);
  let useSidecar = true;
  if (now === 'large') {
    const large = await loadLarge(layout, sidecars, userId);
    if (large !== 'read whole' && large !== 'no sidecar') return large;
    useSidecar = large === 'read whole';
  }
  const read = now === 'large' ? await readMemories(layout, userId) : now;
  if (!read) return { records: [], vectors: [], quarantined: 0, stamp: null, bytes: 0 };
  // A sidecar is written for a user of `minRecords` memories or more (a rewrite removes it), so a
  // file of fewer lines has none that could prove current: not looking spares a small user's load
  // an open that fails (~0.1 ms of the ~1.3 a cold user of 30 memories cost, bench/cold-user-load.ts).
  const sidecar = useSidecar && countLines(read.content, sidecars.minRecords) >= sidecars.minRecords ? await readSidecar(layout, userId, read.content) : null;
  const fast = sidecar ? parseWithSidecar(read.content, userId, sidecar.sidecar) : null;
  if (fast) {
    const tail = fast.records.length - sidecar!.sidecar.count;
    if (tail >= Math.max(sidecars.minRecords, sidecar!.sidecar.count / 8)) sidecars.refresh(userId, wholeSource(read), fast.records, fast.vectors);
    return { records: fast.records, vectors: fast.vectors, quarantined: 0, stamp: read.stamp, bytes: read.content.length, release: releaser(sidecars, userId, sidecar!.slab) };
  }
  const decoded = parseDecoding(read.content, userId);
  if (decoded) {
    if (decoded.records.length >= sidecars.minRecords) sidecars.refresh(userId, wholeSource(read), decoded.records, decoded.vectors);
    return { records: decoded.records, vectors: decoded.vectors, quarantined: 0, stamp: read.stamp, bytes: read.content.length, release: releaser(sidecars, userId, decoded.slab) };
  }
  const loaded = await parseRepairing(layout, sidecars, userId, read, repair);
  if (!loaded) return null;
  const vectors = decodeVectors(loaded.records.map((record) => record.vec));
  const records = loaded.records.map(({ vec: _vec, ...record }) => record);
  // After a quarantine the file was rewritten: the next load builds the sidecar from that file.
  if (loaded.quarantined === 0 && records.length >= sidecars.minRecords) sidecars.refresh(userId, wholeSource(read), records, vectors);
  return { ...loaded, records, vectors };
}

/**
 * A file past READ_AT_ONCE_MAX_BYTES, one handle for all of it: through its sidecar when one
 * proves current (`loadCovered`), else decoded in pieces (`loadDecoding`). 'read whole' and 'no
 * sidecar' as `loadCovered` answers them; 'no sidecar' also when decoding in pieces did not serve.
 */
async function loadLarge(layout: UserLayout, sidecars: SidecarWriter, userId: string): Promise<LoadedUnits | 'read whole' | 'no sidecar'> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(layout.memoriesFile(userId), 'r');
    const stats = await handle.stat({ bigint: true });
    if (!stats.isFile()) return 'no sidecar';
    const covered = await loadCovered(handle, stats, layout, sidecars, userId);
    if (covered !== 'no sidecar') return covered;
    return (await loadDecoding(handle, stats, sidecars, userId)) ?? 'no sidecar';
  } catch {
    // The plain path reads the file again and reports what is wrong with it.
    return 'read whole';
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * A large user's load when its sidecar proves current, without the memories file in memory: the
 * lines it covers read in pieces (covered-lines.ts), the vectors the sidecar's, the lines after it
 * read and decoded. 'read whole' when the sidecar is good but its file should be read whole (a
 * tail long enough for a new sidecar, which is built from the whole file's bytes; lines that do
 * not parse, for the plain path to judge); 'no sidecar' when there is none that fits this file.
 */
async function loadCovered(handle: FileHandle, stats: BigIntStats, layout: UserLayout, sidecars: SidecarWriter, userId: string): Promise<LoadedUnits | 'read whole' | 'no sidecar'> {
  const size = Number(stats.size);
  // A tail this long gets a new sidecar, built from the whole file's bytes: decided on the header, before the body is read.
  const accept = (header: { covered: number }) => header.covered > size || size - header.covered < header.covered / 8;
  // The vectors are read while the memories file is: the reads overlap the parse.
  const file = await readSidecarFile(layout, userId, { accept, vectorsLater: true });
  if (file === 'declined') return 'read whole';
  if (!file) return 'no sidecar';
  const framed = frameSidecar(file.bytes);
  if (framed.status === 'invalid') return notUsed(layout, userId, framed.reason);
  const { sidecar } = framed;
  if (sidecar.covered > size) return notUsed(layout, userId, SIDECAR_REFUSALS.coversMore);
  const digest = startDigest();
  const covered = await readCoveredLines(handle, sidecar, userId, digest);
  if (!covered) return 'read whole';
  if (!(await file.whole)) return notUsed(layout, userId, SIDECAR_REFUSALS.size);
  if (!digestMatches(digest, file.bytes)) return notUsed(layout, userId, SIDECAR_REFUSALS.notMatching);
  const rest = await readInto(handle, Buffer.allocUnsafeSlow(size - sidecar.covered), sidecar.covered);
  if (!addTail(covered, rest, 0, rest.length, userId)) return 'read whole';
  return { ...covered, quarantined: 0, stamp: stampOf(stats), bytes: size, release: releaser(sidecars, userId, file.slab) };
}

/**
 * A large user's load without a sidecar that fits (none yet, or the file rewritten since it was
 * written: a delete), without the file in memory: its lines decoded in pieces (decoded-lines.ts),
 * a new sidecar written from the digest of the bytes read. Null when any line is unusual: the
 * plain path reads the file again and decides.
 */
async function loadDecoding(handle: FileHandle, stats: BigIntStats, sidecars: SidecarWriter, userId: string): Promise<LoadedUnits | null> {
  const size = Number(stats.size);
  const digest = startDigest();
  const decoded = await readDecodedLines(handle, size, userId, digest).catch(() => null);
  if (!decoded) return null;
  const stamp = stampOf(stats);
  if (decoded.records.length >= sidecars.minRecords) sidecars.refresh(userId, { stamp, inode: Number(stats.ino), covered: size, digest: () => digest }, decoded.records, decoded.vectors);
  return { records: decoded.records, vectors: decoded.vectors, quarantined: 0, stamp, bytes: size, release: releaser(sidecars, userId, decoded.slab) };
}

function notUsed(layout: UserLayout, userId: string, reason: string): 'no sidecar' {
  layout.logger.info({ user_dir: layout.userDir(userId), reason }, 'vector sidecar not used: decoding the vectors from the memories file');
  return 'no sidecar';
}

/** The sidecar when it proves to be built from this very file (read into a slab `release` can free), else null (the reason logged). */
async function readSidecar(layout: UserLayout, userId: string, content: Buffer): Promise<{ sidecar: VectorSidecar; slab: ArrayBuffer } | null> {
  const read = await readSidecarFile(layout, userId);
  if (!read || read === 'declined') return null;
  const checked = checkSidecar(read.bytes, content);
  if (checked.status === 'valid') return { sidecar: checked.sidecar, slab: read.slab };
  notUsed(layout, userId, checked.reason);
  return null;
}

/** A sidecar file read into a slab `release` can free. */
interface SidecarFile {
  bytes: Buffer;
  slab: ArrayBuffer;
  /** Resolves once every byte is in `bytes` (at once, unless the vectors were asked for later): false when the file ended short. */
  whole: Promise<boolean>;
}

/**
 * The user's sidecar file; null when there is none (or it cannot be read); 'declined' when
 * `accept` refuses its header (what is no sidecar's header is left to the caller's check). With
 * `vectorsLater` only the header and the seqs are read before this resolves and the vectors, most
 * of the file, are read meanwhile, while the caller reads the memories file (`whole` says when).
 */
async function readSidecarFile(
  layout: UserLayout,
  userId: string,
  options: { accept?: (header: { count: number; covered: number }) => boolean; vectorsLater?: boolean } = {},
): Promise<SidecarFile | 'declined' | null> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(layout.userFile(userId, VECTOR_SIDECAR_FILE), 'r');
    // The header's count picks the slab's kind: no scan of the memories file on this, the fast path.
    const header = sidecarHeader(await readInto(handle, Buffer.alloc(SIDECAR_HEADER_BYTES)));
    if (header && options.accept && !options.accept(header)) return 'declined';
    const count = header?.count ?? 0;
    const size = (await handle.stat()).size;
    const buffer = releasableBuffer(size, count);
    const first = options.vectorsLater ? Math.min(size, SIDECAR_HEADER_BYTES + count * 4) : size;
    const head = await readInto(handle, buffer.bytes.subarray(0, first));
    if (head.length < first || first === size) return { bytes: head.length < first ? head : buffer.bytes, slab: buffer.slab, whole: Promise.resolve(true) };
    const reading = handle;
    handle = undefined;
    const whole = readInto(reading, buffer.bytes.subarray(first), first).then(
      (rest) => rest.length === size - first,
      () => false,
    );
    void whole.finally(() => reading.close().catch(() => undefined));
    return { bytes: buffer.bytes, slab: buffer.slab, whole };
  } catch {
    return null;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/** The covered lines of a file read whole, checked against the sidecar (covered-lines.ts), then the lines after them. Null when anything does not fit, so the caller reads the file another way. */
function parseWithSidecar(content: Buffer, userId: string, sidecar: VectorSidecar): CoveredLines | null {
  const { sink, lines } = coveredSink(sidecar);
  // The sidecar covers whole lines only (checked), so none of them is torn.
  if (!readRecordLines(content, 0, sidecar.covered, userId, true, sink) || lines.records.length !== sidecar.count) return null;
  return addTail(lines, content, sidecar.covered, content.length, userId) ? lines : null;
}
