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
});
