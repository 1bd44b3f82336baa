import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { JsonlMemoryStore } from '../../src/store/jsonl-memory-store.js';
import type { MemoryStore, UnitDraft } from '../../src/store/memory-store.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { register, tempDir } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';

/**
 * One contract, two stores: every test runs against the JSONL data directory and PostgreSQL.
 * `reopen` gives a second store on the same data (another process, or another replica).
 */
interface Subject {
  store: MemoryStore;
  reopen: () => Promise<MemoryStore>;
}

async function opened(store: MemoryStore): Promise<MemoryStore> {
  await store.init();
  register(() => store.close());
  return store;
}

const implementations: Array<[string, () => Promise<Subject>]> = [
  [
    'jsonl',
    async () => {
      const dir = await tempDir();
      return { store: await opened(new JsonlMemoryStore(dir, silentLogger())), reopen: () => opened(new JsonlMemoryStore(dir, silentLogger())) };
    },
  ],
  [
    'postgres',
    async () => {
      const url = await freshDatabase();
      return { store: await opened(new PostgresStore({ url, logger: silentLogger() })), reopen: () => opened(new PostgresStore({ url, logger: silentLogger() })) };
    },
  ],
];

let counter = 0;

function draft(userId: string, text: string, options: { requestId?: string; createdAt?: string; dims?: number; sessionId?: string } = {}): UnitDraft {
  const vector = new Float32Array(options.dims ?? 8).map((_, i) => Math.sin(++counter + i));
  return {
    record: {
      id: `m-${++counter}`,
      user_id: userId,
      text,
      tags: ['t'],
      importance: 0.5,
      source: 'add',
      created_at: options.createdAt ?? new Date().toISOString(),
      session_id: options.sessionId ?? 's1',
      role: 'Caroline',
      ...(options.requestId !== undefined ? { request_id: options.requestId, message_index: 0 } : {}),
      model: 'test-model',
    },
    vector,
  };
}

describe.each(implementations)('MemoryStore contract: %s', (_name, open) => {
  it('assigns each user its own seqs in write order and returns memories and vectors exactly', async () => {
    const { store, reopen } = await open();
    const first = await store.append('u1', [draft('u1', 'one'), draft('u1', 'two')]);
    const second = await store.append('u1', [draft('u1', 'three')]);
    const other = await store.append('u2', [draft('u2', 'elsewhere')]);
    expect(first!.records.map((record) => record.seq)).toEqual([0, 1]);
    expect(second!.records.map((record) => record.seq)).toEqual([2]);
    expect(other!.records.map((record) => record.seq)).toEqual([0]);

    const written = draft('u3', 'exact', { requestId: 'r-exact' });
    await store.append('u3', [written], { requestId: 'r-exact' });
    for (const reader of [store, await reopen()]) {
      const { units } = await reader.load('u3');
      expect(units).toHaveLength(1);
      expect(units[0].record).toEqual({ ...written.record, seq: 0 });
      expect(Array.from(units[0].vector!)).toEqual(Array.from(written.vector));
      expect((await reader.load('u1')).units.map((unit) => unit.record.text)).toEqual(['one', 'two', 'three']);
    }
  });

  it('stores an Add once per request id, also when the same Add races itself', async () => {
    const { store } = await open();
    const stored = await store.append('u', [draft('u', 'first body', { requestId: 'r1' })], { requestId: 'r1' });
    expect(stored).not.toBeNull();
    expect(await store.append('u', [draft('u', 'second body', { requestId: 'r1' })], { requestId: 'r1' })).toBeNull();
    expect(await store.hasRequest('u', 'r1')).toBe(true);
    expect(await store.hasRequest('u', 'r2')).toBe(false);
    expect(await store.hasRequest('other-user', 'r1')).toBe(false);

    const racers = Array.from({ length: 4 }, (_, i) => store.append('u', [draft('u', `racer ${i}`, { requestId: 'r-race' })], { requestId: 'r-race' }));
    const outcomes = await Promise.all(racers);
    expect(outcomes.filter((outcome) => outcome !== null)).toHaveLength(1);
    const texts = (await store.load('u')).units.map((unit) => unit.record.text);
    expect(texts.filter((text) => text.startsWith('racer'))).toHaveLength(1);
    expect(texts).toContain('first body');
    expect(texts).not.toContain('second body');
  });

  it('concurrent Adds of one user get distinct, gapless seqs', async () => {
    const { store } = await open();
    await Promise.all(Array.from({ length: 12 }, (_, i) => store.append('u', [draft('u', `a${i}`), draft('u', `b${i}`)], { requestId: `r${i}` })));
    const seqs = (await store.load('u')).units.map((unit) => unit.record.seq);
    expect(seqs).toEqual(Array.from({ length: 24 }, (_, i) => i));
  });

  it('moves the version on every append and delete, reports the one before, and leaves it on a write that changes nothing', async () => {
    const { store } = await open();
    expect(await store.countMemories()).toBe(0);
    expect(await store.version('nobody')).toBe(0);
    expect(await store.load('nobody')).toEqual({ version: 0, units: [] });
    const a = (await store.append('u', [draft('u', 'a')]))!;
    expect(a.previousVersion).toBe(0);
    expect(await store.version('u')).toBe(a.version);
    const b = (await store.append('u', [draft('u', 'b')]))!;
    expect(b.previousVersion).toBe(a.version);
    expect(b.version).not.toBe(a.version);
    const removed = await store.remove('u', [a.records[0].id, 'no-such-id']);
    expect(removed.removed).toEqual([{ id: a.records[0].id, seq: 0 }]);
    expect(removed.previousVersion).toBe(b.version);
    expect(await store.version('u')).toBe(removed.version);
    const nothing = await store.remove('u', ['no-such-id']);
    expect(nothing).toEqual({ removed: [], previousVersion: removed.version, version: removed.version });
    expect((await store.load('u')).version).toBe(removed.version);
  });

  it('gives the memories from a seq on, with the version and count of the same instant', async () => {
    const { store } = await open();
    const first = (await store.append('u', [draft('u', 'a'), draft('u', 'b')]))!;
    const second = (await store.append('u', [draft('u', 'c')]))!;
    const changes = await store.changesSince('u', 2);
    expect(changes.version).toBe(second.version);
    expect(changes.count).toBe(3);
    expect(changes.units.map((unit) => unit.record.text)).toEqual(['c']);
    await store.remove('u', [first.records[0].id]);
    const after = await store.changesSince('u', 3);
    expect(after.count).toBe(2);
    expect(after.units).toEqual([]);
    expect(await store.changesSince('nobody', 0)).toEqual({ version: 0, count: 0, units: [] });
  });

  it('counts a user\'s memories and distinct sessions without a load, deletes included', async () => {
    const { store } = await open();
    const sessions = ['s1', 's "quoted" \\ one', 's1', 'ünï', 's "quoted" \\ one'];
    const written = (await store.append('u', sessions.map((sessionId, i) => draft('u', `text ${i}`, { sessionId }))))!;
    await store.append('v', [draft('v', 'other user', { sessionId: 'sv' })]);
    expect(await store.userCounts('u')).toEqual({ count: 5, sessions: 3 });
    await store.remove('u', [written.records[3].id]);
    expect(await store.userCounts('u')).toEqual({ count: 4, sessions: 2 });
    expect(await store.userCounts('nobody')).toEqual({ count: 0, sessions: 0 });
  });

  it('lists every user\'s figures at once, as another store of the same data sees them after each kind of write', async () => {
    const { store, reopen } = await open();
    const reader = await reopen();
    const figures = async (nowMs = Date.now()) => (await reader.poolFigures(nowMs)).map(({ userId, count, sessions }) => ({ userId, count, sessions }));
    expect(await reader.poolFigures(Date.now())).toEqual([]);
    const written = (await store.append('u', [draft('u', 'one', { sessionId: 'a' }), draft('u', 'two', { sessionId: 'b' })]))!;
    await store.append('v', [draft('v', 'three')]);
    expect(await figures()).toEqual([{ userId: 'u', count: 2, sessions: 2 }, { userId: 'v', count: 1, sessions: 1 }]);
    expect((await reader.poolFigures(Date.now())).every((entry) => entry.bytes > 0)).toBe(true);
    await store.remove('u', [written.records[0].id]);
    await store.update('v', (await store.load('v')).units[0].record.id, { text: 'three again', updatedAt: new Date().toISOString() });
    expect(await figures()).toEqual([{ userId: 'u', count: 1, sessions: 1 }, { userId: 'v', count: 1, sessions: 1 }]);
    const soon = Date.parse('2030-01-01T00:00:00Z');
    await store.append('w', [{ ...draft('w', 'brief'), record: { ...draft('w', 'brief').record, expires_at: new Date(soon).toISOString() } }, draft('w', 'lasting', { sessionId: 's2' })]);
    expect(await figures(soon - 1)).toContainEqual({ userId: 'w', count: 2, sessions: 2 });
    expect(await figures(soon)).toContainEqual({ userId: 'w', count: 1, sessions: 1 });
    await store.deleteUser('u');
    expect((await figures(soon)).map((entry) => entry.userId)).toEqual(['v', 'w']);
    expect([await reader.countMemories(), await reader.countUsers()]).toEqual([3, 2]);
  });

  it('purges memories stored before a cutoff and keeps the rest', async () => {
    const { store } = await open();
    await store.append('u', [draft('u', 'old', { createdAt: '2020-01-01T00:00:00.000Z' }), draft('u', 'new', { createdAt: '2030-01-01T00:00:00.000Z' })]);
    const purged = await store.removeOlderThan('u', Date.parse('2025-01-01T00:00:00Z'));
    expect(purged.removed.map((entry) => entry.seq)).toEqual([0]);
    expect((await store.load('u')).units.map((unit) => unit.record.text)).toEqual(['new']);
    expect((await store.removeOlderThan('nobody', Date.now())).removed).toEqual([]);
  });

  it('deletes a user for good, request ids included, without ever repeating a version', async () => {
    const { store } = await open();
    await store.append('gone', [draft('gone', 'x', { requestId: 'r1' })], { requestId: 'r1' });
    await store.append('kept', [draft('kept', 'y')]);
    const before = await store.version('gone');
    expect(await store.deleteUser('gone')).toBe(1);
    expect(await store.deleteUser('never-was')).toBe(0);
    expect((await store.load('gone')).units).toEqual([]);
    expect(await store.listUsers()).toEqual(['kept']);
    expect(await store.hasRequest('gone', 'r1')).toBe(false);
    const again = (await store.append('gone', [draft('gone', 'z', { requestId: 'r1' })], { requestId: 'r1' }))!;
    expect(again).not.toBeNull();
    expect(again.version).not.toBe(before);
    expect(await store.listUsers()).toEqual(['gone', 'kept']);
    expect(await store.countMemories()).toBe(2);
    expect(await store.countUsers()).toBe(2);
  });

  it('counts the users with memories: not one whose memories were all deleted, nor one never written', async () => {
    const { store } = await open();
    expect(await store.countUsers()).toBe(0);
    const emptied = (await store.append('emptied', [draft('emptied', 'x')]))!;
    await store.append('kept', [draft('kept', 'y'), draft('kept', 'z')]);
    expect(await store.countUsers()).toBe(2);
    await store.remove('emptied', [emptied.records[0].id]);
    expect(await store.countUsers()).toBe(1);
    expect(await store.countMemories()).toBe(2);
  });

  it('updates a memory in place: next version under a new seq, the old one in its history, for every reader', async () => {
    const { store, reopen } = await open();
    const { records } = (await store.append('u', [draft('u', 'I live in Paris'), draft('u', 'other')]))!;
    const before = await store.version('u');
    const vector = new Float32Array(8).fill(0.25);
    const result = (await store.update('u', records[0].id, { text: 'I moved to Berlin', metadata: { city: 'Berlin', n: 2, ok: true }, updatedAt: '2030-01-01T00:00:00.000Z', vector, model: 'model-2' }))!;
    expect(result.previousVersion).toBe(before);
    expect(result.version).not.toBe(before);
    expect(result.previousSeq).toBe(0);
    expect(result.record).toMatchObject({ id: records[0].id, seq: 2, text: 'I moved to Berlin', tags: ['t'], version: 2, updated_at: '2030-01-01T00:00:00.000Z', metadata: { city: 'Berlin', n: 2, ok: true }, model: 'model-2' });
    const second = (await store.update('u', records[0].id, { importance: 0.9, metadata: {}, updatedAt: '2031-01-01T00:00:00.000Z' }))!;
    expect(second.record).toMatchObject({ seq: 3, version: 3, importance: 0.9, text: 'I moved to Berlin' });
    expect(second.record).not.toHaveProperty('metadata');
    expect(await store.update('u', 'no-such-id', { text: 'x', updatedAt: '2030-01-01T00:00:00.000Z' })).toBeNull();
    expect(await store.update('nobody', records[0].id, { text: 'x', updatedAt: '2030-01-01T00:00:00.000Z' })).toBeNull();
    for (const reader of [store, await reopen()]) {
      const { units } = await reader.load('u');
      expect(units.map((unit) => [unit.record.text, unit.record.seq])).toEqual([['other', 1], ['I moved to Berlin', 3]]);
      expect(Array.from(units[1].vector!)).toEqual(Array.from(vector));
      expect(units[1].record).not.toHaveProperty('history');
      expect((await reader.changesSince('u', 2)).units.map((unit) => unit.record.id)).toEqual([records[0].id]);
      expect(await reader.history('u', records[0].id)).toEqual([
        { version: 1, text: 'I live in Paris', tags: ['t'], importance: 0.5, metadata: {}, updated_at: records[0].created_at },
        { version: 2, text: 'I moved to Berlin', tags: ['t'], importance: 0.5, metadata: { city: 'Berlin', n: 2, ok: true }, updated_at: '2030-01-01T00:00:00.000Z' },
      ]);
      expect(await reader.history('u', records[1].id)).toEqual([]);
    }
    expect(await store.version('u')).toBe(second.version);
    expect(await store.countMemories()).toBe(2);
  });

  it('deletes a memory\'s history with it, and a user\'s with the user', async () => {
    const { store } = await open();
    const { records } = (await store.append('u', [draft('u', 'a'), draft('u', 'b')]))!;
    for (const record of records) await store.update('u', record.id, { text: `${record.text} again`, updatedAt: new Date().toISOString() });
    await store.remove('u', [records[0].id]);
    expect(await store.history('u', records[0].id)).toEqual([]);
    expect(await store.history('u', records[1].id)).toHaveLength(1);
    await store.deleteUser('u');
    expect(await store.history('u', records[1].id)).toEqual([]);
  });

  it('replaces vectors after a model change without moving the version', async () => {
    const { store } = await open();
    const { records, version } = (await store.append('u', [draft('u', 'a'), draft('u', 'b')]))!;
    const vector = new Float32Array([1, 2, 3, 4]);
    await store.replaceVectors('u', [{ id: records[1].id, vector, model: 'other-model' }]);
    const { units, version: after } = await store.load('u');
    expect(after).toBe(version);
    expect(units[0].record.model).toBe('test-model');
    expect(units[1].record.model).toBe('other-model');
    expect(Array.from(units[1].vector!)).toEqual([1, 2, 3, 4]);
    expect(await store.storedBytes('u')).toBeGreaterThan(0);
  });

  it('keeps any valid Unicode exactly (NUL, the noncharacter the PostgreSQL encoding escapes with), keys of any length, any date and version', async () => {
    const { store, reopen } = await open();
    const odd = 'nul \u0000 esc \uFDD0 both \uFDD00 \\u0000 literally 😀';
    const users = [`user ${odd}`, 'u'.repeat(5_000), `${'é'.repeat(700)}\u0000`];
    for (const userId of users) {
      const written = draft(userId, odd, { requestId: `r ${odd} ${'r'.repeat(3_000)}`, createdAt: '-200000-01-01T00:00:00.000Z', sessionId: `s ${odd}` });
      written.record.id = `id ${odd} ${'i'.repeat(2_000)}`;
      written.record.metadata = { [`key ${odd}`]: `value ${odd}`, big: 1e308, tiny: 5e-324 };
      written.record.model = `model ${odd}`;
      written.record.tags = [odd, ''];
      written.record.history = [{ version: 3_000_000_000, text: odd, tags: [odd], importance: 0.5, metadata: { [odd]: odd }, updated_at: '2020-01-01T00:00:00.000Z' }];
      await store.append(userId, [written], { requestId: written.record.request_id });
      expect(await store.append(userId, [written], { requestId: written.record.request_id })).toBeNull();
      expect(await store.listUsers()).toContain(userId);
      const { history, ...record } = written.record;
      for (const reader of [store, await reopen()]) {
        expect(await reader.hasRequest(userId, written.record.request_id!)).toBe(true);
        expect((await reader.load(userId)).units.map((unit) => unit.record)).toEqual([{ ...record, seq: 0 }]);
        expect(await reader.history(userId, record.id)).toEqual(history);
        expect(await reader.userCounts(userId)).toEqual({ count: 1, sessions: 1 });
      }
      const updated = await store.update(userId, record.id, { text: `${odd} again`, updatedAt: '2030-01-01T00:00:00.000Z' });
      expect(updated?.record).toMatchObject({ id: record.id, text: `${odd} again` });
      expect((await store.removeOlderThan(userId, Date.parse('1970-01-01'))).removed).toEqual([{ id: record.id, seq: 1 }]);
      expect(await store.history(userId, record.id)).toEqual([]);
    }
  });
});

describe('PostgresStore', () => {
  it('migrates once when many replicas start at the same moment', async () => {
    const url = await freshDatabase();
    const stores = Array.from({ length: 6 }, () => new PostgresStore({ url, logger: silentLogger() }));
    for (const store of stores) register(() => store.close());
    await Promise.all(stores.map((store) => store.init()));
    await stores[0].append('u', [draft('u', 'after migration')]);
    expect((await stores[5].load('u')).units).toHaveLength(1);
  });

  it('stores an Add once when replicas race it, each on its own connection pool', async () => {
    const url = await freshDatabase();
    const replicas = await Promise.all(Array.from({ length: 4 }, () => opened(new PostgresStore({ url, logger: silentLogger() }))));
    for (let trial = 0; trial < 10; trial++) {
      const outcomes = await Promise.all(replicas.map((replica, i) => replica.append('u', [draft('u', `t${trial} replica ${i}`)], { requestId: `r${trial}` })));
      expect(outcomes.filter((outcome) => outcome !== null)).toHaveLength(1);
    }
    const { units } = await replicas[0].load('u');
    expect(units).toHaveLength(10);
    expect(units.map((unit) => unit.record.seq)).toEqual(Array.from({ length: 10 }, (_, i) => i));
  });

  it('answers STORAGE_UNAVAILABLE (a 503) when the database cannot be reached', async () => {
    const store = new PostgresStore({ url: 'postgres://memorypool@127.0.0.1:1/none', logger: silentLogger() });
    register(() => store.close());
    await expect(store.init()).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503 });
    await expect(store.append('u', [draft('u', 'lost')])).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    await expect(store.version('u')).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
  });

  it('keeps the password out of its location', () => {
    const store = new PostgresStore({ url: 'postgres://me:secret@127.0.0.1:5432/db', logger: silentLogger() });
    expect(store.location).not.toContain('secret');
    void store.close();
  });
});
