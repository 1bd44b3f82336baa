import { appendFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logger.js';
import { JsonlStore } from '../../../src/store/jsonl-store.js';
import { encodeVector, type StoredRecord } from '../../../src/store/stored-record.js';
import { VECTOR_SIDECAR_FILE } from '../../../src/store/vector-sidecar.js';
import { tempDir } from '../../support/helper.js';

const vectorOf = (seq: number): Float32Array => Float32Array.from({ length: 4 }, (_, i) => seq * 10 + i);

function record(seq: number): StoredRecord {
  return { id: `m${seq}`, user_id: 'u', text: `memory ${seq}`, tags: [], importance: 0.5, source: 'add', created_at: '2024-01-01T00:00:00.000Z', seq, vec: encodeVector(vectorOf(seq)) };
}

async function sidecarIno(store: JsonlStore): Promise<bigint> {
  return (await stat(path.join(store.userDir('u'), VECTOR_SIDECAR_FILE), { bigint: true })).ino;
}

describe('loadUnits', () => {
  it('reads through a sidecar that covers a blank line, and leaves it in place', async () => {
    const store = new JsonlStore(await tempDir(), silentLogger(), { sidecarMinRecords: 2 });
    await store.init();
    await store.append('u', [record(0), record(1)]);
    await appendFile(path.join(store.userDir('u'), 'memories.jsonl'), '\n');
    await store.append('u', [record(2)]);
    await store.loadUnits('u');
    await store.sidecarsSettled();
    const written = await sidecarIno(store);
    const loaded = await store.loadUnits('u');
    await store.sidecarsSettled();
    expect(loaded.records.map((r) => [r.seq, r.vec])).toEqual([[0, undefined], [1, undefined], [2, undefined]]);
    expect(loaded.vectors.map((v) => [...v!])).toEqual([0, 1, 2].map((seq) => [...vectorOf(seq)]));
    // Had the sidecar not been used, the load would have decoded the file and written a new one.
    expect(await sidecarIno(store)).toBe(written);
  });

  it('release frees the vectors of a large user at once, after the sidecar write that encodes them', async () => {
    const store = new JsonlStore(await tempDir(), silentLogger(), { sidecarMinRecords: 2 });
    await store.init();
    // 300 memories: a user large enough for a releasable slab (from 256).
    const seqs = Array.from({ length: 300 }, (_, seq) => seq);
    await store.append('u', seqs.map(record));
    const expected = seqs.map((seq) => [...vectorOf(seq)]);
    // No sidecar yet: the load decodes the JSONL and writes one from these very vectors in the background.
    const decoded = await store.loadUnits('u');
    expect(decoded.release).toBeDefined();
    decoded.release!();
    await store.sidecarsSettled();
    await new Promise((resolve) => setImmediate(resolve));
    expect(decoded.vectors.every((v) => v!.length === 0)).toBe(true);
    // The sidecar holds the vectors as they were: the next load reads them through it, then frees its own slab.
    const written = await sidecarIno(store);
    const read = await store.loadUnits('u');
    expect(await sidecarIno(store)).toBe(written);
    expect(read.vectors.map((v) => [...v!])).toEqual(expected);
    read.release!();
    expect(read.vectors.every((v) => v!.length === 0)).toBe(true);
    // Another load is unaffected by an earlier one's release.
    expect((await store.loadUnits('u')).vectors.map((v) => [...v!])).toEqual(expected);
  });

  it('gives a small user an ordinary slab, with no release: its vectors go with their views', async () => {
    const store = new JsonlStore(await tempDir(), silentLogger(), { sidecarMinRecords: 2 });
    await store.init();
    await store.append('u', [record(0), record(1), record(2)]);
    const loaded = await store.loadUnits('u');
    await store.sidecarsSettled();
    expect(loaded.release).toBeUndefined();
    expect(loaded.vectors.map((v) => [...v!])).toEqual([0, 1, 2].map((seq) => [...vectorOf(seq)]));
    expect(loaded.vectors[0]!.buffer).toBeInstanceOf(ArrayBuffer);
    expect((loaded.vectors[0]!.buffer as ArrayBuffer & { resizable: boolean }).resizable).toBe(false);
    // Through the sidecar the next load wrote, too.
    const again = await store.loadUnits('u');
    expect(again.release).toBeUndefined();
    expect(again.vectors.map((v) => [...v!])).toEqual([0, 1, 2].map((seq) => [...vectorOf(seq)]));
  });
});
