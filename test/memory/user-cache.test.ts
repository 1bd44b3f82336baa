import { readdir } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { silentLogger } from '../../src/logger.js';
import type { MemoryStore } from '../../src/store/memory-store.js';
import { openStore } from '../../src/open-service.js';
import { openService, tempDir } from '../support/helper.js';

const add = (userId: string, requestId: string, texts: string[]) => ({
  requestId,
  userId,
  sessionId: 's1',
  messages: texts.map((content, i) => ({ role: i % 2 ? 'Melanie' : 'Caroline', content, timestamp: 1683554160000 + i * 1000 })),
});

/** Twenty texts per user, each naming the user, so a search can tell whose memories it got. */
function textsOf(user: number): string[] {
  return Array.from({ length: 20 }, (_, i) => `user${user} note ${i}: the ${['kettle', 'lantern', 'harbour', 'violin'][i % 4]} of house ${user}`);
}

describe('the per-user cache', () => {
  it('keeps the users in memory within the budget, evicting the least recently used, and reloads an evicted user on demand', async () => {
    const dataDir = await tempDir();
    const service = await openService({ dataDir, cacheBytes: 150_000 });
    for (let user = 0; user < 30; user++) await service.addConversation(add(`u${user}`, `r${user}`, textsOf(user)));
    // The Adds went to the store alone (small users no process held): the searches load them.
    expect(service.cacheStats().users).toBe(0);
    for (let user = 0; user < 30; user++) await service.search({ userId: `u${user}`, query: 'kettle', limit: 1 });
    const cache = service.cacheStats();
    expect(cache.budget_bytes).toBe(150_000);
    expect(cache.users).toBeGreaterThan(0);
    expect(cache.users).toBeLessThan(30);
    expect(cache.estimated_bytes).toBeLessThanOrEqual(150_000);
    // Every user, evicted or not, answers from its own memories.
    for (let user = 0; user < 30; user++) {
      const hits = await service.search({ userId: `u${user}`, query: `harbour of house ${user}`, limit: 3 });
      expect(hits.length).toBe(3);
      expect(hits.every((hit) => hit.memory.user_id === `u${user}` && hit.memory.text.startsWith(`user${user} `))).toBe(true);
    }
    expect(service.cacheStats().estimated_bytes).toBeLessThanOrEqual(150_000);
    expect(await service.memoryCount()).toBe(600);
    const stats = await service.stats();
    expect(stats.users).toBe(30);
    expect(stats.count).toBe(600);
    // A repeat of an Add whose user was evicted is still recognised.
    expect(await service.addConversation(add('u0', 'r0', ['a different body']))).toEqual({ stored: false, units: 0 });
  });

  it('serves at once after a restart and counts every memory before any user is loaded', async () => {
    const dataDir = await tempDir();
    const first = await openService({ dataDir });
    for (let user = 0; user < 5; user++) await first.addConversation(add(`u${user}`, `r${user}`, textsOf(user)));
    await first.close();
    // Without the background loading (which waits a second after the start), so that nothing is loaded until asked.
    const second = await openService({ dataDir, cacheBytes: 60_000, preload: false });
    expect(await second.memoryCount()).toBe(100);
    expect(second.cacheStats().users).toBe(0);
    // Stats describe every user from the store's counts and load none of them.
    const stats = await second.stats();
    expect(stats.count).toBe(100);
    expect(stats.per_user.map((entry) => [entry.user_id, entry.count, entry.sessions, entry.cached, entry.index.loaded])).toEqual(
      [0, 1, 2, 3, 4].map((user) => [`u${user}`, 20, 1, false, false]),
    );
    expect(second.cacheStats().users).toBe(0);
    const hits = await second.search({ userId: 'u4', query: 'violin of house 4', limit: 1 });
    expect(hits[0].memory.text).toContain('user4');
    expect(second.cacheStats().users).toBe(1);
    // Each user says whether this process holds it: the one searched now.
    expect((await second.stats()).per_user.map((entry) => entry.cached)).toEqual([false, false, false, false, true]);
    expect(second.cacheStats().estimated_bytes).toBeLessThanOrEqual(60_000 + 40_000);
  });

  it('keeps nothing for users that have nothing stored', async () => {
    const service = await openService({ dataDir: await tempDir() });
    await service.addConversation(add('real', 'r1', ['a real memory']));
    expect(await service.search({ userId: 'real', query: 'memory', limit: 1 })).toHaveLength(1);
    for (let i = 0; i < 50; i++) {
      expect(await service.search({ userId: `made-up-${i}`, query: 'anything', limit: 5 })).toEqual([]);
      expect(await service.list({ userId: `made-up-${i}`, limit: 5 })).toEqual([]);
    }
    expect(service.cacheStats().users).toBe(1);
  });

  it('an evicted user with writes in flight loses none of them', async () => {
    const service = await openService({ dataDir: await tempDir(), cacheBytes: 30_000 });
    const writes = [];
    for (let round = 0; round < 5; round++) {
      for (let user = 0; user < 8; user++) writes.push(service.addConversation(add(`u${user}`, `r${user}-${round}`, [`round ${round} of user ${user}`, `more of ${user} in ${round}`])));
    }
    await Promise.all(writes);
    for (let user = 0; user < 8; user++) {
      const listed = await service.list({ userId: `u${user}`, limit: 100 });
      expect(listed).toHaveLength(10);
    }
  });

  it('a user reloaded through its vector sidecar searches and exports exactly as before, also after a delete', async () => {
    const dataDir = await tempDir();
    const first = await openService({ dataDir, preload: false });
    for (let add_ = 0; add_ < 15; add_++) {
      await first.addConversation(add('big', `r${add_}`, Array.from({ length: 20 }, (_, i) => `note ${add_}-${i}: the ${['kettle', 'lantern', 'harbour', 'violin'][i % 4]} of day ${add_}`)));
    }
    const exported = await first.exportUnits('big');
    const hits = await first.search({ userId: 'big', query: 'lantern of day 7', limit: 5 });
    await first.close();
    const sidecarDir = new JsonlStore(dataDir, silentLogger()).userDir('big');
    // Each reopen loads the user once: the first writes the sidecar, the second reads it.
    for (let round = 0; round < 2; round++) {
      const reopened = await openService({ dataDir, preload: false });
      expect(await reopened.search({ userId: 'big', query: 'lantern of day 7', limit: 5 })).toEqual(hits);
      expect(await reopened.exportUnits('big')).toEqual(exported);
      await reopened.close();
      expect(await readdir(sidecarDir)).toContain('vectors.f32');
    }
    const deleting = await openService({ dataDir, preload: false });
    await deleting.delete('big', exported[5].memory.id);
    await deleting.close();
    const last = await openService({ dataDir, preload: false });
    expect(await last.exportUnits('big')).toEqual(exported.filter((_, i) => i !== 5));
    await last.close();
  });

  it("frees a large user's loaded float vectors once it holds their int8 codes and a complete graph, answering exactly as without", async () => {
    const dataDir = await tempDir();
    const weights = { exhaustiveLimit: 100 };
    const first = await openService({ dataDir, preload: false, weights });
    for (let add_ = 0; add_ < 15; add_++) {
      await first.addConversation(add('big', `r${add_}`, Array.from({ length: 20 }, (_, i) => `note ${add_}-${i}: the ${['kettle', 'lantern', 'harbour', 'violin'][i % 4]} of day ${add_}`)));
    }
    await first.addConversation(add('small', 'r0', textsOf(1)));
    await first.close(); // writes the graph's cache
    // A store whose loads count the releases the cache makes, or hand out none (the answers to compare with).
    const counting = (keep: boolean) => {
      const store = openStore({ dataDir }, silentLogger());
      const calls = { releases: 0 };
      const wrapped = new Proxy(store, {
        get(target, key) {
          if (key === 'load') {
            return async (userId: string) => {
              const snapshot = await target.load(userId);
              const release = snapshot.release;
              return { ...snapshot, release: keep && release ? () => (calls.releases++, release()) : undefined };
            };
          }
          const value = Reflect.get(target, key, target) as unknown;
          return typeof value === 'function' ? value.bind(target) : value;
        },
      }) as MemoryStore;
      return { store: wrapped, calls };
    };
    const queries = ['lantern of day 7', 'the kettle', 'harbour of day 12', 'violin'];
    // Twice each: the first load decodes the JSONL and writes the sidecar, the second reads it.
    for (let round = 0; round < 2; round++) {
      const plain = counting(false);
      const without = await openService({ dataDir, preload: false, weights, store: plain.store });
      const expected = [];
      for (const query of queries) expected.push(await without.search({ userId: 'big', query, limit: 10 }));
      await without.close();
      const released = counting(true);
      const service = await openService({ dataDir, preload: false, weights, store: released.store });
      for (const [i, query] of queries.entries()) expect(await service.search({ userId: 'big', query, limit: 10 })).toEqual(expected[i]);
      expect(released.calls.releases).toBe(1);
      // The user goes on: an Add, then a search that finds it and still scores the old memories.
      await service.addConversation(add('big', 'later', ['the lantern of the lighthouse keeper']));
      const hits = await service.search({ userId: 'big', query: 'lantern lighthouse keeper', limit: 5 });
      expect(hits[0].memory.text).toBe('the lantern of the lighthouse keeper');
      expect(hits.every((hit) => Number.isFinite(hit.score))).toBe(true);
      // A user scored exhaustively keeps its float vectors: nothing released.
      await service.search({ userId: 'small', query: 'harbour of house 1', limit: 3 });
      expect(released.calls.releases).toBe(1);
      await service.close();
      // The Add above changes the next round's store: both services of a round see the same one.
    }
  });
});
