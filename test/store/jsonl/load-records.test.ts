import { execFileSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logger.js';
import { JsonlStore } from '../../../src/store/jsonl-store.js';
import { UserLayout } from '../../../src/store/jsonl/layout.js';
import { READ_AT_ONCE_MAX_BYTES, readMemories, readMemoriesNow } from '../../../src/store/jsonl/load-records.js';
import type { StoredRecord } from '../../../src/store/stored-record.js';
import { tempDir } from '../../support/helper.js';

function record(seq: number, text = `memory ${seq}`): StoredRecord {
  return { id: `m${seq}`, user_id: 'u', text, tags: [], importance: 0.5, source: 'add', created_at: '2024-01-01T00:00:00.000Z', seq };
}

async function storeWith(records: StoredRecord[]): Promise<{ layout: UserLayout; store: JsonlStore }> {
  const dir = await tempDir();
  const store = new JsonlStore(dir, silentLogger());
  await store.init();
  if (records.length > 0) await store.append('u', records);
  const layout = new UserLayout(dir, silentLogger());
  await layout.init();
  return { layout, store };
}

describe('readMemoriesNow', () => {
  it('reads a small file synchronously into the same bytes and stamp as the usual read', async () => {
    const { layout } = await storeWith([record(0), record(1), record(2)]);
    const usual = await readMemories(layout, 'u');
    const atOnce = readMemoriesNow(layout, 'u');
    expect(usual).not.toBeNull();
    if (atOnce === null || atOnce === 'large') throw new Error(`read at once: ${atOnce}`);
    expect(atOnce.content.equals(usual!.content)).toBe(true);
    expect(atOnce.stamp).toEqual(usual!.stamp);
    expect(atOnce.inode).toBe(usual!.inode);
  });

  it('leaves a file past the limit to the usual read', async () => {
    const long = 'x'.repeat(4096);
    const count = Math.ceil(READ_AT_ONCE_MAX_BYTES / long.length) + 2;
    const { layout } = await storeWith(Array.from({ length: count }, (_, seq) => record(seq, long)));
    expect((await readMemories(layout, 'u'))!.content.length).toBeGreaterThan(READ_AT_ONCE_MAX_BYTES);
    expect(readMemoriesNow(layout, 'u')).toBe('large');
  });

  it('answers null for a user without a file, either way', async () => {
    const { layout } = await storeWith([]);
    expect(readMemoriesNow(layout, 'nobody')).toBeNull();
    expect(await readMemories(layout, 'nobody')).toBeNull();
  });

  it('refuses a FIFO in place of the file at once, without waiting on the event loop for a writer', async () => {
    const { layout } = await storeWith([record(0)]);
    const file = layout.memoriesFile('u');
    await rm(file);
    execFileSync('mkfifo', [file]);
    // Were the FIFO opened blocking, this would never settle (nothing ever writes to it).
    expect(() => readMemoriesNow(layout, 'u')).toThrow(expect.objectContaining({ code: 'STORAGE_UNAVAILABLE' }));
  });
});
