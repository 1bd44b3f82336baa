import { createHash } from 'node:crypto';
import { open, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readCoveredLines } from '../../../src/store/jsonl/covered-lines.js';
import { encodeVector, type StoredRecord } from '../../../src/store/stored-record.js';
import type { VectorSidecar } from '../../../src/store/vector-sidecar.js';
import { tempDir } from '../../support/helper.js';

const DIMENSIONS = 4;
const vectorOf = (seq: number): Float32Array => Float32Array.from({ length: DIMENSIONS }, (_, i) => seq * 10 + i);

function line(seq: number, text = `memory ${seq}`): string {
  const record: StoredRecord = { id: `m${seq}`, user_id: 'u', text, tags: [], importance: 0.5, source: 'add', created_at: '2024-01-01T00:00:00.000Z', seq, vec: encodeVector(vectorOf(seq)) };
  return `${JSON.stringify(record)}\n`;
}

/** The sidecar a file of these seqs would have, covering its first `covered` bytes. */
function sidecarFor(seqs: readonly number[], covered: number): VectorSidecar {
  const vectors = new Float32Array(seqs.length * DIMENSIONS);
  seqs.forEach((seq, i) => vectors.set(vectorOf(seq), i * DIMENSIONS));
  return { dimensions: DIMENSIONS, count: seqs.length, covered, seqs: Uint32Array.from(seqs), vectors };
}

/** Reads `content` as a memories file through a sidecar of `seqs`; the digest of what was read beside it. */
async function readThrough(content: string, seqs: readonly number[], covered = Buffer.byteLength(content)) {
  const file = path.join(await tempDir(), 'memories.jsonl');
  await writeFile(file, content);
  const handle = await open(file, 'r');
  try {
    const digest = createHash('sha256');
    const lines = await readCoveredLines(handle, sidecarFor(seqs, covered), 'u', digest);
    return { lines, digest: digest.digest('hex') };
  } finally {
    await handle.close();
  }
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

describe('readCoveredLines', () => {
  it('parses lines cut by the 1 MB pieces and a line longer than a piece, hashing exactly the covered bytes', async () => {
    // 40 lines of ~50 KB: pieces end mid-line; one of 2.5 MB needs a larger buffer for its load.
    const seqs = Array.from({ length: 41 }, (_, i) => i);
    const texts = seqs.map((seq) => (seq === 20 ? 'long '.repeat(500_000) : `turn ${seq} `.repeat(5_000)));
    const content = seqs.map((seq) => line(seq, texts[seq])).join('');
    const tail = line(41);
    const { lines, digest } = await readThrough(content + tail, seqs, Buffer.byteLength(content));
    expect(lines!.records.map((r) => r.seq)).toEqual(seqs);
    expect(lines!.records.map((r) => r.text)).toEqual(texts);
    expect(lines!.records.every((r) => r.vec === undefined)).toBe(true);
    expect(lines!.vectors.map((v) => [...v])).toEqual(seqs.map((seq) => [...vectorOf(seq)]));
    // Not a byte of the line after the covered ones.
    expect(digest).toBe(sha256(content));
  });

  it('refuses a file whose lines are not the sidecar\'s: another seq, fewer lines, a file shorter than the cover, a cover ending mid-line', async () => {
    const content = [0, 1, 2].map((seq) => line(seq)).join('');
    expect((await readThrough(content, [0, 1, 2])).lines).not.toBeNull();
    expect((await readThrough(content, [0, 5, 2])).lines).toBeNull();
    expect((await readThrough(content, [0, 1, 2, 3])).lines).toBeNull();
    expect((await readThrough(content, [0, 1, 2], Buffer.byteLength(content) + 10)).lines).toBeNull();
    expect((await readThrough(content, [0, 1, 2], Buffer.byteLength(content) - 1)).lines).toBeNull();
  });

  it('refuses a line that is not a memory of the user, and a line without its vector', async () => {
    const other = line(1).replace('"user_id":"u"', '"user_id":"v"');
    expect((await readThrough(line(0) + other, [0, 1])).lines).toBeNull();
    expect((await readThrough(line(0) + 'not json\n', [0, 1])).lines).toBeNull();
    const bare = `${JSON.stringify({ ...JSON.parse(line(1)), vec: undefined })}\n`;
    expect((await readThrough(line(0) + bare, [0, 1])).lines).toBeNull();
  });
});
