import { createHash, type Hash } from 'node:crypto';

/**
 * A binary copy of a user's stored vectors beside `memories.jsonl`, so that a load neither
 * builds nor base64-decodes a 2.7 KB string per memory: the JSONL stays the source of truth and
 * this file is a cache of it, trusted only when it proves to match.
 *
 * It covers a prefix of the JSONL (the whole file as it was when the sidecar was written; later
 * appends only add lines after it). The header holds a SHA-256 of that JSONL prefix and of the
 * sidecar's own body, so a rewritten JSONL (a delete, a re-embedding), a damaged sidecar or one
 * of another file never passes: the load then decodes the JSONL as before and writes a new one.
 *
 * Layout (little-endian): magic (8 bytes) | dimensions u32 | count u32 | covered JSONL bytes f64 |
 * JSONL inode f64 | SHA-256 (32 bytes) | zero padding to 128 | seqs u32 × count |
 * vectors f32 × count × dimensions. The inode only lets a count for `/health` trust the header
 * without hashing (`JsonlStore.countRecords`; a rewrite removes the sidecar, since a later file
 * may get the same inode); the digest is what a load trusts.
 */
export const VECTOR_SIDECAR_FILE = 'vectors.f32';

const MAGIC = Buffer.from('MPVECF32', 'latin1');
const HEADER_BYTES = 128;
const DIGEST_OFFSET = 32;

export interface VectorSidecar {
  dimensions: number;
  count: number;
  /** Bytes of `memories.jsonl` the sidecar was built from. */
  covered: number;
  seqs: Uint32Array;
  /** One slab for every vector: `vectorAt(i)` is a view, nothing is copied. */
  vectors: Float32Array;
}

export type SidecarCheck = { status: 'valid'; sidecar: VectorSidecar } | { status: 'invalid'; reason: string };

export function vectorAt(sidecar: VectorSidecar, index: number): Float32Array {
  return sidecar.vectors.subarray(index * sidecar.dimensions, (index + 1) * sidecar.dimensions);
}

/**
 * Builds the file for vectors of the records in the first `covered` bytes of the memories file
 * (the whole content it covers), in line order; `jsonlDigest` has been given those bytes
 * (`digestOf`, or piece by piece as a load read them) and is spent here.
 */
export function encodeSidecar(covered: number, inode: number, jsonlDigest: Hash, seqs: readonly number[], vectors: readonly Float32Array[], dimensions: number): Buffer {
  const count = seqs.length;
  const file = Buffer.alloc(HEADER_BYTES + count * 4 + count * dimensions * 4);
  MAGIC.copy(file, 0);
  file.writeUInt32LE(dimensions, 8);
  file.writeUInt32LE(count, 12);
  file.writeDoubleLE(covered, 16);
  file.writeDoubleLE(inode, 24);
  const body = HEADER_BYTES;
  for (let i = 0; i < count; i++) file.writeUInt32LE(seqs[i], body + i * 4);
  const slab = new Float32Array(file.buffer, file.byteOffset + body + count * 4, count * dimensions);
  vectors.forEach((vector, i) => slab.set(vector, i * dimensions));
  finishDigest(jsonlDigest, file).copy(file, DIGEST_OFFSET);
  return file;
}

/** A digest given `jsonl`, the memories file's bytes a sidecar covers. */
export function digestOf(jsonl: Buffer): Hash {
  const hash = startDigest();
  updateInChunks(hash, jsonl);
  return hash;
}

/** The sidecar when it is whole and was built from exactly the first `covered` bytes of `jsonl`. */
export function checkSidecar(file: Buffer, jsonl: Buffer): SidecarCheck {
  const framed = frameSidecar(file);
  if (framed.status === 'invalid') return framed;
  const { covered } = framed.sidecar;
  if (!coverFits(covered, jsonl.length, covered > 0 ? jsonl[covered - 1] : undefined)) return COVERS_MORE;
  return digestMatches(digestOf(jsonl.subarray(0, covered)), file) ? framed : NOT_MATCHING;
}

/**
 * The sidecar's fields when its frame holds (magic, sizes): what a load that reads the memories
 * file in pieces (jsonl/covered-lines.ts) needs before it has the bytes the digest covers. Trust
 * it only once `digestMatches` has said so for the covered bytes.
 */
export function frameSidecar(file: Buffer): SidecarCheck {
  if (file.length < HEADER_BYTES || !file.subarray(0, MAGIC.length).equals(MAGIC)) return { status: 'invalid', reason: SIDECAR_REFUSALS.notSidecar };
  const dimensions = file.readUInt32LE(8);
  const count = file.readUInt32LE(12);
  const covered = file.readDoubleLE(16);
  if (dimensions === 0 || file.length !== HEADER_BYTES + count * 4 + count * dimensions * 4) return { status: 'invalid', reason: SIDECAR_REFUSALS.size };
  if (!Number.isInteger(covered) || covered < 0) return COVERS_MORE;
  const seqsAt = file.byteOffset + HEADER_BYTES;
  // Typed views need aligned offsets; a large file read into its own buffer always is, a copy covers the rest.
  const aligned = seqsAt % 4 === 0 ? file : Buffer.from(file);
  const base = aligned.byteOffset + HEADER_BYTES;
  return {
    status: 'valid',
    sidecar: {
      dimensions,
      count,
      covered,
      seqs: new Uint32Array(aligned.buffer, base, count),
      vectors: new Float32Array(aligned.buffer, base + count * 4, count * dimensions),
    },
  };
}

/** Whether a sidecar covering `covered` bytes can be of a memories file of `length` bytes whose byte before `covered` is `byteBefore`: whole lines of it. */
function coverFits(covered: number, length: number, byteBefore: number | undefined): boolean {
  return covered <= length && (covered === 0 || byteBefore === 0x0a);
}

/** A digest to hand the covered bytes of the memories file to, in order, before `digestMatches`. */
export function startDigest(): Hash {
  return createHash('sha256');
}

/** Whether `file`'s digest is that of the memories bytes `hash` was given (it is spent after). */
export function digestMatches(hash: Hash, file: Buffer): boolean {
  return finishDigest(hash, file).equals(file.subarray(DIGEST_OFFSET, DIGEST_OFFSET + 32));
}

/** Why a sidecar is not used, as the log says it: one wording wherever the check is made. */
export const SIDECAR_REFUSALS = {
  notSidecar: 'not a vector sidecar',
  size: 'truncated or of another size',
  coversMore: 'covers more of the memories file than it holds now',
  notMatching: 'does not match the memories file (rewritten since) or is damaged',
} as const;

const COVERS_MORE: SidecarCheck = { status: 'invalid', reason: SIDECAR_REFUSALS.coversMore };
const NOT_MATCHING: SidecarCheck = { status: 'invalid', reason: SIDECAR_REFUSALS.notMatching };

/**
 * The counts a header states (records, covered JSONL bytes) and the inode of the JSONL it was
 * built from; null when it is no sidecar header. For counts only: nothing is hashed, and the
 * caller checks the inode and the size.
 */
export function sidecarHeader(header: Buffer): { count: number; covered: number; inode: number } | null {
  if (header.length < HEADER_BYTES || !header.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  return { count: header.readUInt32LE(12), covered: header.readDoubleLE(16), inode: header.readDoubleLE(24) };
}

export const SIDECAR_HEADER_BYTES = HEADER_BYTES;

/** SHA-256 of the JSONL prefix (what `hash` was given), the header's fields (sizes, inode) and the body: everything but the digest itself. */
function finishDigest(hash: Hash, file: Buffer): Buffer {
  hash.update(file.subarray(MAGIC.length, DIGEST_OFFSET));
  updateInChunks(hash, file.subarray(HEADER_BYTES));
  return hash.digest();
}

/** A hash takes at most 2 GiB per update ("data is too long"): a million memories' file is more. */
const HASH_CHUNK_BYTES = 1 << 30;

function updateInChunks(hash: Hash, bytes: Buffer): void {
  for (let at = 0; at < bytes.length; at += HASH_CHUNK_BYTES) hash.update(bytes.subarray(at, Math.min(bytes.length, at + HASH_CHUNK_BYTES)));
}
