import { appendFile, readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../../src/logger.js';
import { JsonlMemoryStore } from '../../../src/store/jsonl-memory-store.js';
import type { UnitDraft } from '../../../src/store/memory-store.js';
import { register, tempDir } from '../../support/helper.js';

let counter = 0;
function draft(userId: string, text: string): UnitDraft {
  return {
    record: { id: `m-${++counter}`, user_id: userId, text, tags: [], importance: 0.5, source: 'add', created_at: new Date().toISOString(), session_id: 's1', model: 'test-model' },
    vector: new Float32Array(8).fill(counter),
  };
}

async function opened(dataDir: string): Promise<JsonlMemoryStore> {
  const store = new JsonlMemoryStore(dataDir, silentLogger());
  await store.init();
  register(() => store.close());
  return store;
}

/** A line added behind the store's back: no change event names it, so only a store that reads the user's file counts it. */
async function unrecordedLine(store: JsonlMemoryStore, userId: string): Promise<void> {
  const file = path.join(store.files.userDir(userId), 'memories.jsonl');
  const last = (await readFile(file, 'utf8')).trim().split('\n').at(-1)!;
  await appendFile(file, JSON.stringify({ ...JSON.parse(last), id: 'behind-the-back', seq: 999 }) + '\n');
}

describe('the JSONL pool figures (sync/pool-figures.json, kept by the change feed)', () => {
  it('a store opened later starts from the saved figures and the feed, reading no user the feed does not name', async () => {
    const dataDir = await tempDir();
    const writer = await opened(dataDir);
    for (const userId of ['a', 'b', 'c']) await writer.append(userId, [draft(userId, `${userId} one`), draft(userId, `${userId} two`)]);
    expect(await writer.countMemories()).toBe(6);
    await writer.close();

    await unrecordedLine(writer, 'a');
    const later = await opened(dataDir);
    // a's extra line is not counted: the figures came from the snapshot, not from reading a.
    expect(await later.countMemories()).toBe(6);
    await later.append('b', [draft('b', 'b three')]);
    expect(await later.countMemories()).toBe(7);
    // A write names a: it is read again, the line behind the store's back with it.
    await later.append('a', [draft('a', 'a three')]);
    expect(await later.countMemories()).toBe(9);
    expect((await later.poolFigures(Date.now())).map((entry) => [entry.userId, entry.count])).toEqual([['a', 4], ['b', 3], ['c', 2]]);
  });

  it('measures every user once when there is no snapshot (a data directory written before it existed) or the feed was replaced', async () => {
    const dataDir = await tempDir();
    const writer = await opened(dataDir);
    for (const userId of ['a', 'b']) await writer.append(userId, [draft(userId, `${userId} one`)]);
    await writer.close();
    await unrecordedLine(writer, 'b');
    await rm(path.join(dataDir, 'sync', 'pool-figures.json'), { force: true });
    expect(await (await opened(dataDir)).countMemories()).toBe(3);

    // A prune rewrote the feed: the saved place names a file that is gone.
    await unrecordedLine(writer, 'a');
    const changes = path.join(dataDir, 'sync', 'changes.jsonl');
    await appendFile(`${changes}.new`, await readFile(changes, 'utf8'));
    await rename(`${changes}.new`, changes);
    const reopened = await opened(dataDir);
    expect(await reopened.countMemories()).toBe(4);
    expect(await reopened.countUsers()).toBe(2);
  });

  it('drops a deleted user from the saved figures at once', async () => {
    const dataDir = await tempDir();
    const store = await opened(dataDir);
    await store.append('secret-user', [draft('secret-user', 'x')]);
    await store.append('other', [draft('other', 'y')]);
    await store.countMemories();
    await store.close();
    const again = await opened(dataDir);
    await again.deleteUser('secret-user');
    expect(await again.countUsers()).toBe(1);
    expect(await readFile(path.join(dataDir, 'sync', 'pool-figures.json'), 'utf8')).not.toContain('secret-user');
  });

  it('keeps the users in id order as users come and go (the order is kept between calls)', async () => {
    const store = await opened(await tempDir());
    const ids = async () => (await store.poolFigures(Date.now())).map((entry) => `${entry.userId}:${entry.count}`);
    for (const userId of ['m', 'c', 'x']) await store.append(userId, [draft(userId, `${userId} one`)]);
    expect(await ids()).toEqual(['c:1', 'm:1', 'x:1']);
    await store.append('a', [draft('a', 'a one')]);
    await store.append('m', [draft('m', 'm two')]);
    expect(await ids()).toEqual(['a:1', 'c:1', 'm:2', 'x:1']);
    await store.deleteUser('c');
    expect(await ids()).toEqual(['a:1', 'm:2', 'x:1']);
    await store.append('c', [draft('c', 'c again')]);
    await store.deleteUser('x');
    expect(await ids()).toEqual(['a:1', 'c:1', 'm:2']);
  });
});
