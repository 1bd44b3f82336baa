import { describe, expect, it } from 'vitest';
import { openService } from '../support/helper.js';
import { MIGRATIONS } from '../../src/store/postgres-migrations.js';
import { freshDatabase, withClient } from '../support/postgres.js';

const add = (userId: string, requestId: string, texts: string[]) => ({
  requestId,
  userId,
  sessionId: 's1',
  messages: texts.map((content, i) => ({ role: i % 2 ? 'Melanie' : 'Caroline', content, timestamp: 1683554160000 + i * 1000 })),
});

/** Two services on one database: two replicas in one process, each with its own cache. */
async function replicas(): Promise<{ url: string; a: Awaited<ReturnType<typeof openService>>; b: Awaited<ReturnType<typeof openService>> }> {
  const url = await freshDatabase();
  return { url, a: await openService({ databaseUrl: url }), b: await openService({ databaseUrl: url }) };
}

describe('MemoryService on PostgreSQL', () => {
  it('reads its writes across replicas: an Add on one is found by the next Search on the other, cached or not', async () => {
    const { a, b } = await replicas();
    await a.addConversation(add('u', 'r0', ['the first note about a kettle']));
    expect((await b.search({ userId: 'u', query: 'kettle', limit: 5 })).map((hit) => hit.memory.text)).toEqual(['the first note about a kettle']);
    for (let trial = 1; trial <= 10; trial++) {
      const [writer, reader] = trial % 2 ? [a, b] : [b, a];
      await writer.addConversation(add('u', `r${trial}`, [`marker${trial}zz appears once`]));
      const hits = await reader.search({ userId: 'u', query: `marker${trial}zz`, limit: 1 });
      expect(hits[0]?.memory.text).toBe(`marker${trial}zz appears once`);
    }
    expect((await b.list({ userId: 'u', limit: 100 })).length).toBe(11);
    expect(await b.memoryCount()).toBe(11);
  });

  it('sees deletes across replicas: one memory, a whole user, and the retention purge', async () => {
    const { a, b } = await replicas();
    await a.addConversation(add('u', 'r1', ['lantern by the door', 'violin in the hall']));
    await a.addConversation(add('gone', 'r1', ['a memory of a user to delete']));
    const [lantern] = await b.search({ userId: 'u', query: 'lantern', limit: 1 });
    expect(lantern.memory.text).toBe('lantern by the door');
    expect((await b.search({ userId: 'gone', query: 'memory', limit: 1 })).length).toBe(1);

    await a.delete('u', lantern.memory.id);
    expect((await b.search({ userId: 'u', query: 'lantern door', limit: 5 })).map((hit) => hit.memory.text)).toEqual(['violin in the hall']);
    await expect(b.get('u', lantern.memory.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });

    expect(await b.deleteUser('gone')).toBe(1);
    expect(await a.search({ userId: 'gone', query: 'memory', limit: 1 })).toEqual([]);
    // Written again from scratch: the new memory only, and the old request id is free again.
    expect(await a.addConversation(add('gone', 'r1', ['a new beginning']))).toEqual({ stored: true, units: 1 });
    expect((await b.list({ userId: 'gone', limit: 10 })).map((memory) => memory.text)).toEqual(['a new beginning']);

    expect(await a.purgeOlderThan(Date.now() + 60_000)).toBe(2);
    expect(await b.search({ userId: 'u', query: 'violin', limit: 5 })).toEqual([]);
    expect(await b.memoryCount()).toBe(0);
  });

  it('stores an Add once when both replicas receive it at the same moment', async () => {
    const { a, b } = await replicas();
    for (let trial = 0; trial < 8; trial++) {
      const outcomes = await Promise.all([a, b, a, b].map((replica, i) => replica.addConversation(add('u', `r${trial}`, [`trial ${trial} body ${i}`, 'second message']))));
      expect(outcomes.filter((outcome) => outcome.stored)).toHaveLength(1);
    }
    const texts = (await a.list({ userId: 'u', limit: 100 })).map((memory) => memory.text);
    expect(texts.filter((text) => text === 'second message')).toHaveLength(8);
    expect(texts).toHaveLength(16);
  });

  it('sees updates across replicas: the new text at once, never the old, and concurrent updates each get their own version', async () => {
    const { a, b } = await replicas();
    const kept = await a.addMemory({ userId: 'u', text: 'the kettle is in the kitchen' });
    const moving = await a.addMemory({ userId: 'u', text: 'I live in Paris by the Seine', metadata: { kind: 'home' } });
    expect((await b.search({ userId: 'u', query: 'Paris Seine', limit: 1 }))[0].memory.id).toBe(moving.id); // b has the user cached
    for (let trial = 1; trial <= 6; trial++) {
      const [writer, reader] = trial % 2 ? [a, b] : [b, a];
      const text = `I moved to city${trial}qq`;
      const updated = await writer.updateMemory({ userId: 'u', id: moving.id, text });
      expect(updated.version).toBe(trial + 1);
      const hits = await reader.search({ userId: 'u', query: `city${trial}qq Paris Seine moved`, limit: 5 });
      expect(hits.filter((hit) => hit.memory.id === moving.id).map((hit) => hit.memory.text)).toEqual([text]);
      expect(hits.some((hit) => hit.memory.text.includes('Paris'))).toBe(false);
      expect((await reader.get('u', moving.id)).version).toBe(trial + 1);
    }
    // Both replicas writing the same memory at once: neither update is lost.
    await Promise.all([a.updateMemory({ userId: 'u', id: moving.id, importance: 0.9 }), b.updateMemory({ userId: 'u', id: moving.id, tags: ['x'] })]);
    const history = await b.history('u', moving.id);
    expect(history.versions.map((version) => version.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await a.get('u', moving.id)).toMatchObject({ version: 9, importance: 0.9, tags: ['x'], metadata: { kind: 'home' } });
    expect((await a.list({ userId: 'u', limit: 10 })).map((memory) => memory.id)).toEqual([moving.id, kept.id]);
    await a.delete('u', moving.id);
    await expect(b.history('u', moving.id)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(await b.list({ userId: 'u', limit: 10 })).toHaveLength(1);
  });

  it('keeps its tables partitioned by user_id and migrated once', async () => {
    const { url } = await replicas();
    await withClient(url, async (client) => {
      const partitioned = await client.query<{ relname: string }>(
        "SELECT c.relname FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid WHERE p.partstrat = 'h' ORDER BY c.relname",
      );
      expect(partitioned.rows.map((row) => row.relname)).toEqual(['add_requests', 'memories', 'memory_changes', 'memory_features', 'memory_versions', 'user_figures', 'users']);
      expect((await client.query('SELECT version FROM schema_migrations ORDER BY version')).rows).toEqual(
        MIGRATIONS.map((migration) => ({ version: migration.version })),
      );
      expect(MIGRATIONS.map((migration) => migration.version)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
    });
  });
});
