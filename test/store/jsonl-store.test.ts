import { appendFile, open, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { readLines } from '../../src/store/jsonl/file-pieces.js';
import { indexIn } from '../../src/store/jsonl/line-scanner.js';
import type { StoredRecord } from '../../src/store/stored-record.js';
import { tempDir } from '../support/helper.js';

function record(seq: number, extra: Partial<StoredRecord> = {}): StoredRecord {
  return { id: `m${seq}`, user_id: 'u', text: `memory ${seq}`, tags: [], importance: 0.5, source: 'cli', created_at: '2024-01-01T00:00:00.000Z', seq, ...extra };
}

function capturingLogger(): { logger: ReturnType<typeof pino>; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe('JsonlStore', () => {
  it('appends, loads and rewrites a user\'s memories', async () => {
    const store = new JsonlStore(await tempDir(), capturingLogger().logger);
    await store.init();
    await store.append('u', [record(0), record(1)]);
    await store.append('u', [record(2)]);
    expect((await store.load('u')).records.map((r) => r.seq)).toEqual([0, 1, 2]);
    await store.rewrite('u', [record(0), record(2)]);
    expect((await store.load('u')).records.map((r) => r.seq)).toEqual([0, 2]);
    expect(await store.listUsers()).toEqual(['u']);
  });

  it('keeps users in separate folders that no user id can escape', async () => {
    const dataDir = await tempDir();
    const store = new JsonlStore(dataDir, capturingLogger().logger);
    await store.init();
    for (const userId of ['../../etc', 'a/b', '.', '..', 'nul\u0000byte', 'ünïcødé 🙂']) {
      await store.append(userId, [record(0, { user_id: userId })]);
      expect(path.dirname(store.userDir(userId))).toBe(path.join(dataDir, 'users'));
      expect((await store.load(userId)).records).toHaveLength(1);
    }
    expect((await store.listUsers()).sort()).toEqual(['../../etc', 'a/b', '.', '..', 'nul\u0000byte', 'ünïcødé 🙂'].sort());
    expect((await readdir(dataDir)).sort()).toEqual(['format.json', 'users']);
  });

  it('quarantines a torn last line with a warning, so the next append stays whole', async () => {
    const { logger, lines } = capturingLogger();
    const store = new JsonlStore(await tempDir(), logger);
    await store.init();
    await store.append('u', [record(0), record(1)]);
    const file = path.join(store.userDir('u'), 'memories.jsonl');
    await appendFile(file, '{"id":"m2","user_id":"u","te');
    const loaded = await store.load('u');
    expect(loaded.records.map((r) => r.seq)).toEqual([0, 1]);
    expect(loaded.quarantined).toBe(1);
    expect(lines.some((line) => line.level === 40 && String(line.msg).includes('torn') && line.line === 3 && line.file === file)).toBe(true);
    expect(await readFile(path.join(store.userDir('u'), 'quarantine.jsonl'), 'utf8')).toContain('"te');
    await store.append('u', [record(3)]);
    expect((await store.load('u')).records.map((r) => r.seq)).toEqual([0, 1, 3]);
  });

  it('quarantines malformed lines in the middle, naming file and line', async () => {
    const { logger, lines } = capturingLogger();
    const store = new JsonlStore(await tempDir(), logger);
    await store.init();
    await store.append('u', [record(0)]);
    const file = path.join(store.userDir('u'), 'memories.jsonl');
    await appendFile(file, 'not json at all\n{"id": 5}\n');
    await store.append('u', [record(1)]);
    const loaded = await store.load('u');
    expect(loaded.records.map((r) => r.seq)).toEqual([0, 1]);
    const warnings = lines.filter((line) => line.level === 40 && String(line.msg).includes('malformed'));
    expect(warnings.map((line) => line.line)).toEqual([2, 3]);
    const quarantine = await readFile(path.join(store.userDir('u'), 'quarantine.jsonl'), 'utf8');
    expect(quarantine).toBe('not json at all\n{"id": 5}\n');
  });

  it('drops the records of an Add cut short by a crash (never acknowledged)', async () => {
    const { logger } = capturingLogger();
    const store = new JsonlStore(await tempDir(), logger);
    await store.init();
    await store.append('u', [record(0, { request_id: 'a', batch: 1 })]);
    // Two of the three lines of Add "b" reached the disk.
    const file = path.join(store.userDir('u'), 'memories.jsonl');
    await appendFile(file, [record(1, { request_id: 'b', batch: 3 }), record(2, { request_id: 'b', batch: 3 })].map((r) => JSON.stringify(r) + '\n').join(''));
    const loaded = await store.load('u');
    expect(loaded.records.map((r) => r.seq)).toEqual([0]);
    expect(loaded.quarantined).toBe(2);
  });

  it('a rewrite leaves whole files only (no temp files behind)', async () => {
    const store = new JsonlStore(await tempDir(), capturingLogger().logger);
    await store.init();
    await store.append('u', [record(0, { request_id: 'a', batch: 2 }), record(1, { request_id: 'a', batch: 2 })]);
    await store.rewrite('u', [record(1, { request_id: 'a', batch: 2 })]);
    // Deleting one memory of an Add must not make the rest look like a torn Add.
    expect((await store.load('u')).records.map((r) => r.seq)).toEqual([1]);
    expect((await readdir(store.userDir('u'))).sort()).toEqual(['memories.jsonl', 'user.json']);
  });

  it('deleteUser removes the folder for good', async () => {
    const store = new JsonlStore(await tempDir(), capturingLogger().logger);
    await store.init();
    await store.append('u', [record(0)]);
    await writeFile(store.cacheFilePath('u', 'vectors.hnsw'), 'x');
    await store.deleteUser('u');
    expect(await store.listUsers()).toEqual([]);
    expect((await store.load('u')).records).toEqual([]);
  });
});

describe('readLines (a file a piece at a time, as runs of whole lines)', () => {
  it('hands over exactly the whole lines between the bounds, in order, wherever pieces cut them, lines longer than a piece included', async () => {
    const file = path.join(await tempDir(), 'lines');
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom('a', 'b', 'é', '\n'), { maxLength: 80 }), fc.integer({ min: 1, max: 9 }), fc.integer({ min: 0, max: 80 }), async (chars, pieceBytes, cut) => {
        const bytes = Buffer.from(chars.join(''));
        // `from` a line's start, `to` anywhere (a line under way past it).
        const starts = [0, ...[...bytes.keys()].filter((i) => bytes[i - 1] === 10)];
        const from = starts[Math.min(cut % starts.length, starts.length - 1)]!;
        const to = Math.max(from, Math.min(bytes.length, from + cut));
        await writeFile(file, bytes);
        const handle = await open(file, 'r');
        try {
          const runs: Buffer[] = [];
          const read = await readLines(handle, from, to, { lines: (buffer, end) => (runs.push(Buffer.from(buffer.subarray(0, end))), true) }, pieceBytes);
          const span = bytes.subarray(from, to);
          const whole = span.subarray(0, span.lastIndexOf(10) + 1);
          expect(Buffer.concat(runs).equals(whole)).toBe(true);
          expect(runs.every((run) => run.at(-1) === 10)).toBe(true);
          expect(read).toEqual({ status: 'read', unfinished: span.length - whole.length });
        } finally {
          await handle.close();
        }
      }),
    );
  });

  it('says when the file ends before the bound', async () => {
    const file = path.join(await tempDir(), 'lines');
    await writeFile(file, 'one\ntwo\nthr');
    const handle = await open(file, 'r');
    try {
      expect(await readLines(handle, 0, 100, { lines: () => true }, 4)).toEqual({ status: 'short', unfinished: 3 });
    } finally {
      await handle.close();
    }
  });
});

describe('indexIn (indexOf that stays right past 2 GiB, searching windows)', () => {
  it('finds what indexOf finds before the bound, whatever the window, needles straddling windows included', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(10, 34, 44, 97), { maxLength: 50 }), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 50 }), fc.integer({ min: 1, max: 7 }), (bytes, from, to, window) => {
        const content = Buffer.from(bytes);
        const end = Math.min(content.length, Math.max(from, to));
        for (const value of [10, Buffer.from(',"'), Buffer.from('a,a')]) {
          const found = content.indexOf(value, from);
          const expected = found !== -1 && found + (typeof value === 'number' ? 1 : value.length) <= end ? found : -1;
          expect(indexIn(content, value, from, end, window)).toBe(expected);
        }
      }),
    );
  });
});
