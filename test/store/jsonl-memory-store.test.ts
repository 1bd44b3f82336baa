import { appendFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { JsonlMemoryStore } from '../../src/store/jsonl-memory-store.js';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import type { UnitDraft } from '../../src/store/memory-store.js';
import { register, tempDir } from '../support/helper.js';

/** Two stores on one data directory: what two processes see of each other (the lock is a file, so it holds between them as between processes). */
async function twoStores(): Promise<[JsonlMemoryStore, JsonlMemoryStore]> {
  const dir = await tempDir();
  const stores = [new JsonlMemoryStore(dir, silentLogger()), new JsonlMemoryStore(dir, silentLogger())] as const;
  for (const store of stores) {
    await store.init();
    register(() => store.close());
  }
  return [stores[0], stores[1]];
}

let counter = 0;
function draft(userId: string, text: string, requestId?: string): UnitDraft {
  return {
    record: { id: `m-${++counter}`, user_id: userId, text, tags: [], importance: 0.5, source: 'add', created_at: new Date().toISOString(), model: 'test', ...(requestId ? { request_id: requestId } : {}) },
    vector: new Float32Array(4).fill(counter),
  };
}

describe('JsonlMemoryStore shared by several processes', () => {
  it('sees the other\'s appends on its next call: version, count, the appended units alone, and new users', async () => {
    const [a, b] = await twoStores();
    await a.append('u', [draft('u', 'one'), draft('u', 'two')]);
    const before = await b.version('u');
    expect((await b.load('u')).units).toHaveLength(2);
    expect(await b.version('u')).toBe(before);
    await a.append('u', [draft('u', 'three')]);
    const after = await b.version('u');
    expect(after).not.toBe(before);
    const changes = await b.changesSince('u', 2);
    expect(changes).toMatchObject({ version: after, count: 3 });
    expect(changes.units.map((unit) => [unit.record.seq, unit.record.text])).toEqual([[2, 'three']]);
    expect(Array.from(changes.units[0].vector!)).toEqual(Array(4).fill(counter));
    await a.append('v', [draft('v', 'elsewhere')]);
    expect(await b.listUsers()).toEqual(['u', 'v']);
    expect([await b.countMemories(), await b.countUsers()]).toEqual([4, 2]);
  });

  it('keeps seqs and request ids exact between writers: no seq twice, an Add stored by one refused by the other', async () => {
    const [a, b] = await twoStores();
    const written = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? a : b).append('u', [draft('u', `n${i}`), draft('u', `n${i}b`)])));
    const seqs = written.flatMap((result) => result!.records.map((record) => record.seq)).sort((x, y) => x - y);
    expect(seqs).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(await a.append('u', [draft('u', 'first', 'r1')], { requestId: 'r1' })).not.toBeNull();
    expect(await b.hasRequest('u', 'r1')).toBe(true);
    expect(await b.append('u', [draft('u', 'again', 'r1')], { requestId: 'r1' })).toBeNull();
    expect((await a.load('u')).units).toHaveLength(41);
  });

  it('never gives a seq out twice, even after the other deleted the newest memories or the whole user', async () => {
    const [a, b] = await twoStores();
    const first = await a.append('u', [draft('u', 'zero'), draft('u', 'one'), draft('u', 'two')]);
    await b.load('u');
    await b.remove('u', [first!.records[2].id]);
    const next = await a.append('u', [draft('u', 'three')]);
    expect(next!.records[0].seq).toBe(3);
    // A replica holding seqs 0-2 tells the delete from an append by the count over the seqs since 3.
    const changes = await a.changesSince('u', 3);
    expect([changes.count, changes.units.map((unit) => unit.record.text)]).toEqual([3, ['three']]);
    expect(await a.deleteUser('u')).toBe(3);
    expect(await b.version('u')).toBe(0);
    expect(await b.countMemories()).toBe(0);
    const reborn = await b.append('u', [draft('u', 'again')]);
    expect(reborn!.records[0].seq).toBe(4);
  });

  it('a rewrite by one sees the appends of the other made before it and keeps them; deletes are seen by the other', async () => {
    const [a, b] = await twoStores();
    const kept = await a.append('u', [draft('u', 'keep'), draft('u', 'drop')]);
    await b.append('u', [draft('u', 'from b')]);
    const removed = await a.remove('u', [kept!.records[1].id]);
    expect(removed.removed.map((entry) => entry.seq)).toEqual([1]);
    expect((await b.load('u')).units.map((unit) => unit.record.text)).toEqual(['keep', 'from b']);
    expect(await b.countMemories()).toBe(2);
  });

  it("an append after a read that met a dead writer's torn line repairs it first: the acknowledged record stays whole", async () => {
    const [a, b] = await twoStores();
    await a.append('u', [draft('u', 'before the crash')]);
    // A writer died inside its append: half a line, no newline (its lock, gone with it, is not the point here).
    await appendFile(path.join(new JsonlStore(a.location, silentLogger()).userDir('u'), 'memories.jsonl'), '{"id":"torn","user_id":"u","te');
    // Reads without the lock (as an Add's early checks are) by the store that wrote the first line,
    // whose head is behind: they take the whole lines in and leave the tail alone.
    expect(await a.hasRequest('u', 'r-none')).toBe(false);
    expect(await a.storedCount('u')).toBe(1);
    await a.append('u', [draft('u', 'after the crash')]);
    expect((await a.load('u')).units.map((unit) => unit.record.text)).toEqual(['before the crash', 'after the crash']);
    expect((await b.load('u')).units.map((unit) => unit.record.text)).toEqual(['before the crash', 'after the crash']);
  });
});
