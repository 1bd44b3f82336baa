import { describe, expect, it } from 'vitest';
import type { MemoryService } from '../../src/memory/memory-service.js';
import type { ChangesRequest } from '../../src/memory/change-feed.js';
import { TWO_SERVICES } from '../support/two-services.js';
import { openService, readFilesUnder, tempDir } from '../support/helper.js';
import { freshDatabase, withClient } from '../support/postgres.js';

const everyone = { allowed: () => true };
const page = (service: MemoryService, request: Partial<ChangesRequest> = {}) => service.changes({ after: 0, limit: 100, waitSeconds: 0, ...everyone, ...request });

describe.each(TWO_SERVICES)('the change feed (%s)', (_name, open) => {
  it('records every write once, in order, identically from both services, each memory as that write left it', async () => {
    const [a, b] = await open({ changesPollMs: 20 });
    const kettle = await a.addMemory({ userId: 'u', text: 'the kettle is in the kitchen' });
    await b.addConversation({ requestId: 'r1', userId: 'v', sessionId: 's', messages: [{ role: 'Ann', content: 'first message', timestamp: 1 }, { role: 'Bo', content: 'second message', timestamp: 2 }] });
    await b.updateMemory({ userId: 'u', id: kettle.id, text: 'the kettle is in the shed' });
    const doomed = await b.addMemory({ userId: 'u', text: 'a secret to forget' });
    await a.delete('u', doomed.id);
    await a.deleteUser('v');

    const fromA = await page(a);
    const fromB = await page(b);
    expect(fromB).toEqual(fromA);
    expect(fromA.events.map((event) => [event.seq, event.type, event.user_id])).toEqual([
      [1, 'added', 'u'],
      [2, 'added', 'v'],
      [3, 'added', 'v'],
      [4, 'updated', 'u'],
      [5, 'added', 'u'],
      [6, 'deleted', 'u'],
      [7, 'user_deleted', 'v'],
    ]);
    expect(fromA.next_cursor).toBe('7');
    const [added, , , updated, addedDoomed, deleted, userDeleted] = fromA.events;
    // The first event shows the memory as it was then; the update's as it is now.
    expect(added.memory).toMatchObject({ id: kettle.id, version: 1, text: 'the kettle is in the kitchen' });
    expect(updated.memory).toMatchObject({ id: kettle.id, version: 2, text: 'the kettle is in the shed' });
    // Deleted since, or a deletion: no memory, nothing of what it said.
    expect(addedDoomed).toMatchObject({ memory_id: doomed.id, memory: null });
    expect(deleted).toMatchObject({ memory_id: doomed.id, memory: null });
    expect(userDeleted).toMatchObject({ memory_id: null, memory: null });
    expect(JSON.stringify(fromA)).not.toContain('secret');

    // Paging: limit and cursor; one user's events only.
    const first = await page(b, { limit: 2 });
    expect(first.events.map((event) => event.seq)).toEqual([1, 2]);
    expect((await page(b, { after: Number(first.next_cursor), limit: 2 })).events.map((event) => event.seq)).toEqual([3, 4]);
    expect((await page(a, { userId: 'u' })).events.map((event) => event.seq)).toEqual([1, 4, 5, 6]);
    // A caller allowed some users only sees theirs, and its cursor still moves past the rest.
    const scoped = await page(a, { allowed: (userId) => userId === 'v' });
    expect(scoped.events.map((event) => event.seq)).toEqual([2, 3, 7]);
    expect(scoped.next_cursor).toBe('7');
    expect(await page(a, { after: 7 })).toEqual({ events: [], next_cursor: '7' });
  });

  it('names an expiry sweep\'s deletions expired', async () => {
    let now = Date.parse('2026-03-01T12:00:00Z');
    const [a, b] = await open({ clock: () => now });
    const brief = await a.addMemory({ userId: 'u', text: 'brief', ttlSeconds: 60 });
    now += 61_000;
    expect(await b.sweepExpired()).toBe(1);
    expect((await page(a)).events.map((event) => [event.type, event.memory_id, event.memory])).toEqual([
      ['added', brief.id, null],
      ['expired', brief.id, null],
    ]);
  });

  it('holds a long poll until the other service writes, and answers at the deadline with nothing', async () => {
    const [a, b] = await open({ changesPollMs: 20 });
    await a.addMemory({ userId: 'u', text: 'before' });
    const waiting = page(a, { after: 1, waitSeconds: 20 });
    let answered = false;
    void waiting.then(() => (answered = true));
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(answered).toBe(false);
    await b.addMemory({ userId: 'u', text: 'after' });
    const woken = await waiting;
    expect(woken.events.map((event) => [event.seq, event.memory?.text])).toEqual([[2, 'after']]);
    const empty = await page(b, { after: 2, waitSeconds: 1 });
    expect(empty).toEqual({ events: [], next_cursor: '2' });
  });

  it('prunes events past the retention but the newest, numbering on from it; an older cursor is refused with the oldest one held', async () => {
    const [a, b] = await open();
    for (const text of ['one', 'two', 'three']) await a.addMemory({ userId: 'u', text });
    expect(await b.pruneChanges(-1)).toBe(2);
    await expect(page(a, { after: 0 })).rejects.toMatchObject({ code: 'CURSOR_EXPIRED', status: 410, body: { oldest_cursor: '2' } });
    expect((await page(a, { after: 2 })).events.map((event) => event.seq)).toEqual([3]);
    await b.addMemory({ userId: 'u', text: 'four' });
    expect((await page(a, { after: 2 })).events.map((event) => [event.seq, event.memory?.text])).toEqual([[3, 'three'], [4, 'four']]);
    expect(await a.pruneChanges(7)).toBe(0);
  });
});

/** Everything a store holds as text: every file of the data directory, every row of every table. */
const STORE_TEXT: Array<[string, () => Promise<{ service: MemoryService; dump: () => Promise<string> }>]> = [
  ['JSONL', async () => {
    const dataDir = await tempDir();
    return { service: await openService({ dataDir }), dump: async () => (await readFilesUnder(dataDir)).join('\n') };
  }],
  ['PostgreSQL', async () => {
    const url = await freshDatabase();
    const dump = () =>
      withClient(url, async (client) => {
        const tables = await client.query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public'");
        const texts = await Promise.all(tables.rows.map(async ({ tablename }) => (await client.query<{ row: string }>(`SELECT t::text AS row FROM ${tablename} t`)).rows.map((row) => row.row).join('\n')));
        return texts.join('\n');
      });
    return { service: await openService({ databaseUrl: url }), dump };
  }],
];

describe.each(STORE_TEXT)('what the feed keeps of deleted memories (%s)', (_name, open) => {
  it('no text of a deleted memory, nor of a deleted user, anywhere in the store; their events stay, without it', async () => {
    const { service, dump } = await open();
    const memory = await service.addMemory({ userId: 'u', text: 'the safe code is kiwi-one' });
    await service.updateMemory({ userId: 'u', id: memory.id, text: 'the safe code is mango-two' });
    await service.addMemory({ userId: 'leaving', text: 'the leaving user said papaya-three' });
    expect(await dump()).toContain('kiwi-one');
    await service.delete('u', memory.id);
    await service.deleteUser('leaving');
    const held = await dump();
    for (const text of ['kiwi-one', 'mango-two', 'papaya-three']) expect(held).not.toContain(text);
    const { events } = await page(service);
    expect(events.map((event) => [event.type, event.memory])).toEqual([['added', null], ['updated', null], ['added', null], ['deleted', null], ['user_deleted', null]]);
  });
});
