import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { openStore } from '../../src/open-service.js';
import type { MemoryStore } from '../../src/store/memory-store.js';
import { openService, tempDir } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';

const STORES: Array<[string, () => Promise<MemoryStore>]> = [
  ['JSONL', async () => openStore({ dataDir: await tempDir() }, silentLogger())],
  ['PostgreSQL', async () => openStore({ databaseUrl: await freshDatabase() }, silentLogger())],
];

const add = (userId: string, requestId: string, texts: string[]) => ({
  requestId,
  userId,
  sessionId: 's1',
  messages: texts.map((content, i) => ({ role: i % 2 ? 'Melanie' : 'Caroline', content, timestamp: 1683554160000 + i * 1000 })),
});

/** The store with its appends held at a gate while `hold` is set, to place another request inside one. */
function gated(store: MemoryStore): { store: MemoryStore; hold: () => { entered: Promise<void>; release: () => void } } {
  let gate: { entered: () => void; released: Promise<void> } | null = null;
  const wrapped = new Proxy(store, {
    get(target, key, receiver) {
      if (key !== 'append') {
        const value = Reflect.get(target, key, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      }
      return async (...args: Parameters<MemoryStore['append']>) => {
        const held = gate;
        gate = null;
        if (held) {
          held.entered();
          await held.released;
        }
        return target.append(...args);
      };
    },
  });
  return {
    store: wrapped,
    hold: () => {
      let entered!: () => void;
      let release!: () => void;
      const enteredPromise = new Promise<void>((resolve) => (entered = resolve));
      gate = { entered, released: new Promise<void>((resolve) => (release = resolve)) };
      return { entered: enteredPromise, release };
    },
  };
}

describe.each(STORES)('an Add to a user this process does not hold (%s)', (_name, openTheStore) => {
  it('goes to the store without loading the user, is found by the next Search, and a repeat is refused', async () => {
    const service = await openService({ store: await openTheStore(), preload: false });
    expect(await service.addConversation(add('ann', 'r1', ['Ann keeps bees on the roof', 'What kind of bees?']))).toEqual({ stored: true, units: 2 });
    await service.addMemory({ userId: 'ann', text: 'Ann sells the honey at the market' });
    expect(service.cacheStats().users).toBe(0);
    expect(await service.memoryCount()).toBe(3);
    expect(await service.addConversation(add('ann', 'r1', ['another body']))).toEqual({ stored: false, units: 0 });
    const hits = await service.search({ userId: 'ann', query: 'honey market', limit: 1 });
    expect(hits[0].memory.text).toBe('Ann sells the honey at the market');
    expect(service.cacheStats().users).toBe(1);
    // Held now: the next Adds go through its cached state, and are found without a reload.
    await service.addMemory({ userId: 'ann', text: 'Ann bought a second hive in May' });
    expect(await service.addConversation(add('ann', 'r1', ['a third body']))).toEqual({ stored: false, units: 0 });
    expect((await service.search({ userId: 'ann', query: 'second hive', limit: 1 }))[0].memory.text).toBe('Ann bought a second hive in May');
    expect((await service.list({ userId: 'ann', limit: 10 })).length).toBe(4);
  });

  it('a Search that loads the user while the Add is being written still finds the Add right after it is answered', async () => {
    const { store, hold } = gated(await openTheStore());
    const service = await openService({ store, preload: false });
    await service.addMemory({ userId: 'bo', text: 'Bo rides a red bicycle' });
    const gate = hold();
    const adding = service.addMemory({ userId: 'bo', text: 'Bo moved to Lisbon last spring' });
    await gate.entered;
    // The user is loaded (without the Add, which is not written yet) while the Add waits to be written.
    expect((await service.search({ userId: 'bo', query: 'Lisbon', limit: 5 })).map((hit) => hit.memory.text)).toEqual(['Bo rides a red bicycle']);
    expect(service.cacheStats().users).toBe(1);
    gate.release();
    await adding;
    expect((await service.search({ userId: 'bo', query: 'Lisbon', limit: 1 }))[0].memory.text).toBe('Bo moved to Lisbon last spring');
    expect((await service.list({ userId: 'bo', limit: 10 })).length).toBe(2);
  });

  it('a user that would pass the exhaustive limit is loaded first, so that its graph is kept current by the write', async () => {
    const service = await openService({ store: await openTheStore(), preload: false, weights: { exhaustiveLimit: 3 } });
    await service.addConversation(add('cy', 'r1', ['one about kites', 'two about boats']));
    expect(service.cacheStats().users).toBe(0);
    // Three would still be scored exhaustively: straight to the store.
    await service.addMemory({ userId: 'cy', text: 'three about trains' });
    expect(service.cacheStats().users).toBe(0);
    // Four keeps a graph: this write loads the user and fills its graph.
    await service.addMemory({ userId: 'cy', text: 'four about planes' });
    expect(service.cacheStats().users).toBe(1);
    await service.indexesReady();
    const stats = await service.stats();
    expect(stats.per_user.find((entry) => entry.user_id === 'cy')?.index).toMatchObject({ graph: true, loaded: true, vectors: 4, complete: true });
  });
});
