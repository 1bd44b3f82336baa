import { describe, expect, it } from 'vitest';
import type { MemoryService } from '../../src/memory/memory-service.js';
import { TWO_SERVICES } from '../support/two-services.js';

/** A clock the test moves: expiry is judged by it, on every service that shares it. */
function testClock(start = Date.parse('2026-03-01T12:00:00Z')): { now: () => number; advance: (ms: number) => void } {
  let now = start;
  return { now: () => now, advance: (ms) => (now += ms) };
}

describe.each(TWO_SERVICES)('expiry (%s)', (_name, open) => {
  it('hides a memory on every read of every service from its instant on, before any sweep; the sweep then deletes it with its history', async () => {
    const clock = testClock();
    const [a, b] = await open({ clock: clock.now });
    const brief = await a.addMemory({ userId: 'u', text: 'the door code is 4711', ttlSeconds: 60 });
    const lasting = await a.addMemory({ userId: 'u', text: 'the door is painted blue' });
    expect(brief.expires_at).toBe('2026-03-01T12:01:00.000Z');
    await b.updateMemory({ userId: 'u', id: brief.id, text: 'the door code is 4712' });
    const hits = async (service: MemoryService) => (await service.search({ userId: 'u', query: 'door code', limit: 5 })).map((hit) => hit.memory.id);
    expect(await hits(b)).toContain(brief.id);

    const windowed = (service: MemoryService) =>
      service.search({ userId: 'u', query: 'door code', limit: 5, filter: { sinceMs: Date.parse('2026-01-01T00:00:00Z') } }).then((found) => found.map((hit) => hit.memory.id));
    expect(await windowed(a)).toContain(brief.id);

    clock.advance(60_000);
    for (const service of [a, b]) {
      expect(await hits(service)).toEqual([lasting.id]);
      // A time window alone is tested on the units' times; an expired memory stays hidden under it.
      expect(await windowed(service)).toEqual([lasting.id]);
      expect((await service.list({ userId: 'u', limit: 10 })).map((memory) => memory.id)).toEqual([lasting.id]);
      expect((await service.listPage({ userId: 'u', limit: 10, filter: { where: { field: 'expires_at', op: 'exists', value: true } } })).memories).toEqual([]);
      await expect(service.get('u', brief.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(service.history('u', brief.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(service.updateMemory({ userId: 'u', id: brief.id, text: 'again' })).rejects.toMatchObject({ code: 'NOT_FOUND' });
      expect((await service.exportRecords('u')).map((record) => record.id)).toEqual([lasting.id]);
    }
    // Still stored until the sweep.
    expect((await a.store.load('u')).units.map((unit) => unit.record.id).sort()).toEqual([brief.id, lasting.id].sort());
    expect(await b.sweepExpired()).toBe(1);
    expect(await a.sweepExpired()).toBe(0);
    expect((await a.store.load('u')).units.map((unit) => unit.record.id)).toEqual([lasting.id]);
    expect(await a.store.history('u', brief.id)).toEqual([]);
    expect(await a.memoryCount()).toBe(1);
  });

  it('sets, moves and clears an expiry by update; a cleared one never expires', async () => {
    const clock = testClock();
    const [a, b] = await open({ clock: clock.now });
    const memory = await a.addMemory({ userId: 'u', text: 'on call this week', expiresAtMs: clock.now() + 1_000 });
    const moved = await b.updateMemory({ userId: 'u', id: memory.id, expiresAtMs: clock.now() + 10_000 });
    expect(moved.expires_at).toBe(new Date(clock.now() + 10_000).toISOString());
    clock.advance(5_000);
    expect((await a.get('u', memory.id)).id).toBe(memory.id);
    const cleared = await a.updateMemory({ userId: 'u', id: memory.id, expiresAtMs: null });
    expect(cleared).not.toHaveProperty('expires_at');
    clock.advance(86_400_000);
    expect((await b.get('u', memory.id)).version).toBe(3);
    expect(await b.sweepExpired()).toBe(0);
    expect((await b.history('u', memory.id)).versions.map((version) => version.expires_at ?? null)).toEqual([
      new Date(Date.parse('2026-03-01T12:00:00Z') + 1_000).toISOString(),
      new Date(Date.parse('2026-03-01T12:00:00Z') + 10_000).toISOString(),
      null,
    ]);
  });

  it('leaves expired memories out of the counts from their instant on, before any sweep', async () => {
    const clock = testClock();
    const [a, b] = await open({ clock: clock.now });
    await a.addMemory({ userId: 'u', text: 'brief one', ttlSeconds: 60, metadata: { expires_at: 'not the field' } });
    await a.addMemory({ userId: 'u', text: 'lasting one', tags: ['keep'] });
    const updated = await a.addMemory({ userId: 'v', text: 'brief two', expiresAtMs: clock.now() + 30_000 });
    // A version in its history expires: only the memory's own expiry counts.
    await a.updateMemory({ userId: 'v', id: updated.id, expiresAtMs: null });
    await a.addMemory({ userId: 'v', text: 'brief three', ttlSeconds: 45 });
    // a reads both users, so it holds them (its Adds went to the store alone).
    for (const userId of ['u', 'v']) await a.list({ userId, limit: 10 });
    const perUser = async (service: MemoryService) => Object.fromEntries((await service.stats()).per_user.map((entry) => [entry.user_id, entry.count]));
    expect(await a.memoryCount()).toBe(4);
    clock.advance(60_000);
    // a holds both users; b holds neither (its figures come from the store's files or rows).
    expect(await a.memoryCount()).toBe(2);
    for (const service of [a, b]) {
      expect(await perUser(service)).toEqual({ u: 1, v: 1 });
      expect((await service.stats()).count).toBe(2);
    }
    await a.sweepExpired();
    expect(await b.memoryCount()).toBe(2);
  });

  it('sweeps a user this service does not hold without loading the users that have nothing expired', async () => {
    const clock = testClock();
    // No background loading: what the sweep loads is all b holds.
    const [a, b] = await open({ clock: clock.now, preload: false });
    await a.addMemory({ userId: 'brief', text: 'the parking spot is 12', ttlSeconds: 60 });
    await a.addMemory({ userId: 'brief', text: 'the parking garage is on Elm street' });
    for (const userId of ['calm-1', 'calm-2']) await a.addMemory({ userId, text: `${userId} likes tea` });
    clock.advance(60_000);
    expect(b.cacheStats().users).toBe(0);
    expect(await b.sweepExpired()).toBe(1);
    // Only the user with something to delete was loaded.
    expect(b.cacheStats().users).toBe(1);
    expect((await a.store.load('brief')).units.map((unit) => unit.record.text)).toEqual(['the parking garage is on Elm street']);
    expect(await b.sweepExpired()).toBe(0);
  });
});
