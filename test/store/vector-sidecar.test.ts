import { appendFile, copyFile, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { encodeVector, type StoredRecord } from '../../src/store/stored-record.js';
import { VECTOR_SIDECAR_FILE } from '../../src/store/vector-sidecar.js';
import { tempDir } from '../support/helper.js';

const DIMENSIONS = 8;

/**
 * Loads that read a file in pieces through its sidecar, and those of them that the pieces served
 * (the fast path, not a fallback); loads decoded in pieces without one (`decoded`).
 */
const pieces = vi.hoisted(() => ({ reads: 0, served: 0, decoded: 0 }));
vi.mock('../../src/store/jsonl/covered-lines.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/store/jsonl/covered-lines.js')>();
  return {
    ...original,
    readCoveredLines: async (...args: Parameters<typeof original.readCoveredLines>) => {
      pieces.reads++;
      const lines = await original.readCoveredLines(...args);
      if (lines) pieces.served++;
      return lines;
    },
  };
});
vi.mock('../../src/store/jsonl/decoded-lines.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/store/jsonl/decoded-lines.js')>();
  return {
    ...original,
    readDecodedLines: async (...args: Parameters<typeof original.readDecodedLines>) => {
      const lines = await original.readDecodedLines(...args);
      if (lines) pieces.decoded++;
      return lines;
    },
  };
});

function vectorOf(seq: number): Float32Array {
  return Float32Array.from({ length: DIMENSIONS }, (_, i) => Math.sin(seq * 7 + i));
}

/**
 * Each test runs twice: with short texts, whose files a load reads at once, and with texts long
 * enough for files past READ_AT_ONCE_MAX_BYTES (512 KB at ten memories), which a load reads in
 * pieces through the sidecar (src/store/jsonl/covered-lines.ts), several lines to a piece.
 */
let padding = '';

function textOf(seq: number): string {
  return `memory "${seq}", with a comma and a quote${padding}`;
}

function record(seq: number, userId = 'u', extra: Partial<StoredRecord> = {}): StoredRecord {
  return {
    id: `m${seq}`,
    user_id: userId,
    text: textOf(seq),
    tags: [],
    importance: 0.5,
    source: 'add',
    created_at: '2024-01-01T00:00:00.000Z',
    seq,
    vec: encodeVector(vectorOf(seq)),
    model: 'm@1',
    ...extra,
  };
}

function records(from: number, to: number, userId = 'u'): StoredRecord[] {
  return Array.from({ length: to - from }, (_, i) => record(from + i, userId));
}

function capturingLogger(): { logger: ReturnType<typeof pino>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

async function openStore(dataDir?: string): Promise<{ store: JsonlStore; lines: Array<Record<string, unknown>> }> {
  const { logger, lines } = capturingLogger();
  const store = new JsonlStore(dataDir ?? (await tempDir()), logger, { sidecarMinRecords: 4 });
  await store.init();
  return { store, lines };
}

/** Loads, and checks every record comes with its own vector and no `vec` string. */
async function loadChecked(store: JsonlStore, userId = 'u'): Promise<Awaited<ReturnType<JsonlStore['loadUnits']>>> {
  const loaded = await store.loadUnits(userId);
  loaded.records.forEach((loadedRecord, i) => {
    expect(loadedRecord.vec).toBeUndefined();
    expect([...loaded.vectors[i]!]).toEqual([...vectorOf(loadedRecord.seq)]);
  });
  await store.sidecarsSettled();
  return loaded;
}

const sidecarUnused = (lines: Array<Record<string, unknown>>): boolean => lines.some((line) => String(line.msg).includes('sidecar not used'));

describe.each([
  { files: 'small files', pad: 0 },
  { files: 'files read in pieces', pad: 60_000 },
])('the vector sidecar of the JSONL store, $files', ({ pad }) => {
  beforeEach(() => {
    padding = ' and more'.repeat(pad / 9);
    pieces.reads = 0;
    pieces.served = 0;
    pieces.decoded = 0;
  });

  it('is written after a load and serves the next one: vectors are views of one slab, text and fields intact', async () => {
    const { store, lines } = await openStore();
    await store.append('u', records(0, 10));
    const first = await loadChecked(store);
    expect(await readdir(store.userDir('u'))).toContain(VECTOR_SIDECAR_FILE);
    // The first load had no sidecar: it decoded the file (in pieces when large) and wrote one from what it read.
    expect(pieces.reads).toBe(0);
    expect(pieces.decoded).toBe(pad === 0 ? 0 : 1);
    const second = await loadChecked(store);
    expect(sidecarUnused(lines)).toBe(false);
    expect(pieces.served).toBe(pad === 0 ? 0 : 1);
    expect(second.records).toEqual(first.records);
    expect(second.records[3].text).toBe(textOf(3));
    expect(second.records[3].model).toBe('m@1');
    const slab = second.vectors[0]!.buffer;
    expect(second.vectors.every((vector) => vector!.buffer === slab)).toBe(true);
    expect(slab.byteLength).toBe((await readFile(path.join(store.userDir('u'), VECTOR_SIDECAR_FILE))).length);
  });

  it('decodes the lines appended since, and refreshes itself once they are many', async () => {
    const { store } = await openStore();
    await store.append('u', records(0, 16));
    await loadChecked(store);
    const before = await readFile(path.join(store.userDir('u'), VECTOR_SIDECAR_FILE));
    await store.append('u', records(16, 17));
    expect((await loadChecked(store)).records.map((r) => r.seq)).toEqual(Array.from({ length: 17 }, (_, i) => i));
    // One record after 16 is below an eighth: the sidecar stays as it was.
    expect((await readFile(path.join(store.userDir('u'), VECTOR_SIDECAR_FILE))).equals(before)).toBe(true);
    await store.append('u', records(17, 30));
    expect((await loadChecked(store)).records).toHaveLength(30);
    expect((await readFile(path.join(store.userDir('u'), VECTOR_SIDECAR_FILE))).length).toBeGreaterThan(before.length);
    expect(await store.countRecords('u')).toBe(30);
  });

  it('goes when the memories file is rewritten (a delete), and is rebuilt by the next load', async () => {
    const { store, lines } = await openStore();
    await store.append('u', records(0, 10));
    await loadChecked(store);
    await store.rewrite('u', records(0, 10).filter((r) => r.seq !== 4));
    expect(await readdir(store.userDir('u'))).not.toContain(VECTOR_SIDECAR_FILE);
    expect(await store.countRecords('u')).toBe(9);
    const loaded = await loadChecked(store);
    expect(loaded.records.map((r) => r.seq)).toEqual([0, 1, 2, 3, 5, 6, 7, 8, 9]);
    expect(await readdir(store.userDir('u'))).toContain(VECTOR_SIDECAR_FILE);
    lines.length = 0;
    await loadChecked(store);
    expect(sidecarUnused(lines)).toBe(false);
  });

  it('counts right through deletes and Adds: a rewrite removes the old sidecar, whose inode the file system may give the new file', async () => {
    const { store } = await openStore();
    let kept = records(0, 12);
    await store.append('u', kept);
    for (let round = 0; round < 8; round++) {
      await loadChecked(store);
      // Delete, Add, delete: each delete replaces the file, and the second new file may get the
      // inode of the one the sidecar was built from.
      kept = kept.slice(1);
      await store.rewrite('u', kept);
      const added = records(100 + round * 3, 103 + round * 3);
      await store.append('u', added);
      kept = [...kept, ...added].slice(1);
      await store.rewrite('u', kept);
      expect(await store.countRecords('u')).toBe(kept.length);
    }
  });

  it('serves a load whose lines after it are one whole Add, and leaves an Add cut short to the plain load', async () => {
    const { store } = await openStore();
    await store.append('u', records(0, 16));
    await loadChecked(store);
    const sidecarBytes = (await readFile(path.join(store.userDir('u'), VECTOR_SIDECAR_FILE))).length;
    await store.append('u', records(16, 19).map((r) => ({ ...r, request_id: 'r1', batch: 3 })));
    const whole = await loadChecked(store);
    expect(whole.records.map((r) => r.seq)).toEqual(Array.from({ length: 19 }, (_, i) => i));
    // The covered vectors are views of the sidecar's slab: the sidecar served this load.
    expect(whole.vectors[0]!.buffer.byteLength).toBe(sidecarBytes);
    // Two records of an Add of three: never acknowledged, quarantined by the plain load.
    await store.append('u', records(19, 21).map((r) => ({ ...r, request_id: 'r2', batch: 3 })));
    const cut = await loadChecked(store);
    expect(cut.records).toHaveLength(19);
    expect(cut.quarantined).toBe(2);
  });

  it('is never trusted when damaged or taken from another user: the JSONL decides', async () => {
    const dataDir = await tempDir();
    const { store, lines } = await openStore(dataDir);
    await store.append('u', records(0, 10));
    await store.append('v', records(100, 110, 'v'));
    await loadChecked(store, 'u');
    await loadChecked(store, 'v');
    const file = path.join(store.userDir('u'), VECTOR_SIDECAR_FILE);
    const damaged = await readFile(file);
    damaged[damaged.length - 3] ^= 0x40;
    await writeFile(file, damaged);
    await loadChecked(store, 'u');
    expect(lines.filter((line) => String(line.msg).includes('sidecar not used')).map((line) => line.reason)).toEqual([
      'does not match the memories file (rewritten since) or is damaged',
    ]);
    await copyFile(path.join(store.userDir('v'), VECTOR_SIDECAR_FILE), file);
    await loadChecked(store, 'u');
    await writeFile(file, 'short');
    await loadChecked(store, 'u');
    expect(lines.filter((line) => String(line.msg).includes('sidecar not used'))).toHaveLength(3);
  });

  it.runIf(pad === 0)('is not looked for when the file holds fewer lines than a sidecar is written for: a small user loads from the JSONL alone', async () => {
    const { store, lines } = await openStore();
    await store.append('u', records(0, 3));
    // A file where a sidecar would be: looked at, it would be refused and the refusal logged.
    await writeFile(path.join(store.userDir('u'), VECTOR_SIDECAR_FILE), 'short');
    await loadChecked(store, 'u');
    expect(sidecarUnused(lines)).toBe(false);
    // At the size a sidecar is written for (4 here), the load looks, refuses it, and writes its own.
    await store.append('u', records(3, 4));
    await loadChecked(store, 'u');
    expect(sidecarUnused(lines)).toBe(true);
    expect((await readFile(path.join(store.userDir('u'), VECTOR_SIDECAR_FILE))).length).toBeGreaterThan('short'.length);
  });

  it('leaves a torn or malformed line after it to the plain load, which quarantines it', async () => {
    const { store } = await openStore();
    await store.append('u', records(0, 10));
    await loadChecked(store);
    const memories = path.join(store.userDir('u'), 'memories.jsonl');
    await appendFile(memories, 'not json\n' + JSON.stringify(record(10)) + '\n{"id":"m11","te');
    const loaded = await loadChecked(store);
    expect(loaded.records.map((r) => r.seq)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    expect(loaded.quarantined).toBe(2);
    expect(await readFile(path.join(store.userDir('u'), 'quarantine.jsonl'), 'utf8')).toBe('not json\n{"id":"m11","te\n');
  });

  it('keeps the plain path for a line whose vector is missing, and writes no sidecar for it', async () => {
    const { store } = await openStore();
    const { vec: _vec, ...bare } = record(3);
    await store.append('u', [...records(0, 3), bare, ...records(4, 8)]);
    const loaded = await store.loadUnits('u');
    await store.sidecarsSettled();
    expect(loaded.vectors[3]).toBeNull();
    expect(loaded.vectors[4]).not.toBeNull();
    expect(await readdir(store.userDir('u'))).not.toContain(VECTOR_SIDECAR_FILE);
  });

  it("keeps a metadata key named vec as the user's value, with or without the record's own vector, on every load path", async () => {
    const { store } = await openStore();
    // A string of exactly a vector's base64 length: the case that could be taken for a vector.
    const lookalike = encodeVector(vectorOf(99));
    // Not the first key, so that its bytes are those of the record's own member: `,"vec":"`.
    const { vec: _vec, ...bare } = record(3, 'u', { metadata: { note: 'no vector', vec: lookalike } });
    await store.append('u', [...records(0, 3), bare, record(4, 'u', { metadata: { note: 'both', vec: lookalike } }), ...records(5, 10)]);
    for (let load = 0; load < 2; load++) {
      // The first load decodes the lines (no sidecar yet), the second reads through a sidecar when one was written.
      const loaded = await store.loadUnits('u');
      await store.sidecarsSettled();
      expect(loaded.records[3].metadata).toEqual({ note: 'no vector', vec: lookalike });
      expect(loaded.vectors[3]).toBeNull();
      expect(loaded.records[4].metadata).toEqual({ note: 'both', vec: lookalike });
      expect([...loaded.vectors[4]!]).toEqual([...vectorOf(4)]);
      expect(loaded.records.every((r) => r.vec === undefined)).toBe(true);
    }
  });

  it('a deleted user stays deleted although its sidecar was being written', async () => {
    const { store } = await openStore();
    await store.append('u', records(0, 10));
    await store.loadUnits('u');
    await store.deleteUser('u');
    await store.sidecarsSettled();
    expect(await store.listUsers()).toEqual([]);
    expect(await readdir(path.dirname(store.userDir('u')))).toEqual([]);
  });
});
