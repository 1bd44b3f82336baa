import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { MIGRATIONS } from '../../src/store/postgres-migrations.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { register } from '../support/helper.js';
import { freshDatabase, withClient } from '../support/postgres.js';

describe('PostgreSQL migrations', () => {
  it('upgrades a database of the previous schema in place: its memories load, update and keep a history', async () => {
    const url = await freshDatabase();
    const previous = MIGRATIONS.slice(0, -1);
    const vector = Buffer.from(new Float32Array([0.5, -0.5, 0.25, 1]).buffer);
    // The schema as the last release left it, with a memory written the way that release wrote it.
    await withClient(url, async (client) => {
      await client.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
      for (const migration of previous) {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      }
      await client.query("INSERT INTO users (user_id, next_seq, version, memory_count) VALUES ('old-user', 1, 7, 1)");
      await client.query(
        `INSERT INTO memories (user_id, seq, id, created_at, record, vector, model) VALUES ('old-user', 0, 'm-old', '2024-05-01T10:00:00Z', $1::jsonb, $2, 'm1')`,
        [JSON.stringify({ text: 'I live in Paris', tags: ['home'], importance: 0.5, source: 'cli', created_at: '2024-05-01T10:00:00.000Z' }), vector],
      );
    });

    const store = new PostgresStore({ url, logger: silentLogger() });
    register(() => store.close());
    await store.init();
    await withClient(url, async (client) => {
      const versions = (await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((row) => row.version);
      expect(versions).toEqual(MIGRATIONS.map((migration) => migration.version));
    });
    const { units, version } = await store.load('old-user');
    expect(version).toBe(7);
    expect(units.map((unit) => unit.record)).toEqual([
      { text: 'I live in Paris', tags: ['home'], importance: 0.5, source: 'cli', created_at: '2024-05-01T10:00:00.000Z', id: 'm-old', user_id: 'old-user', seq: 0, model: 'm1' },
    ]);
    expect(await store.history('old-user', 'm-old')).toEqual([]);

    const updated = (await store.update('old-user', 'm-old', { text: 'I moved to Berlin', metadata: { city: 'Berlin' }, updatedAt: '2025-01-01T00:00:00.000Z' }))!;
    expect(updated).toMatchObject({ previousVersion: 7, version: 8, previousSeq: 0, record: { seq: 1, version: 2, text: 'I moved to Berlin' } });
    expect(await store.history('old-user', 'm-old')).toEqual([
      { version: 1, text: 'I live in Paris', tags: ['home'], importance: 0.5, metadata: {}, updated_at: '2024-05-01T10:00:00.000Z' },
    ]);
    // The vector was kept (the text came without a new one here) and the row count did not move.
    const [unit] = (await store.load('old-user')).units;
    expect(Array.from(unit.vector!)).toEqual([0.5, -0.5, 0.25, 1]);
    expect(await store.countMemories()).toBe(1);

    // Applying the migrations again (another replica starting) changes nothing.
    const again = new PostgresStore({ url, logger: silentLogger() });
    register(() => again.close());
    await again.init();
    expect(await again.history('old-user', 'm-old')).toHaveLength(1);
  });

  it("keeps each memory's vector in its row (migration 8): nothing in the memories' TOAST tables", async () => {
    const url = await freshDatabase();
    const store = new PostgresStore({ url, logger: silentLogger() });
    register(() => store.close());
    await store.init();
    // The 512-dimensional model's 2 KB vectors, a row of ~2.6 KB: past the 2 KB at which PostgreSQL would move the vector out.
    const vectorOf = (i: number) => new Float32Array(512).map((_, d) => Math.sin(i * 7 + d));
    for (let user = 0; user < 8; user++) {
      await store.append(
        `user-${user}`,
        Array.from({ length: 20 }, (_, i) => ({
          record: { id: `m-${user}-${i}`, user_id: `user-${user}`, text: `memory ${i} of user ${user}, a sentence of ordinary length about the weekend`, tags: [], importance: 0.5, source: 'add' as const, created_at: '2024-05-01T10:00:00.000Z', model: 'm1' },
          vector: vectorOf(i),
        })),
      );
    }
    const [unit] = (await store.load('user-3')).units;
    expect(Array.from(unit.vector!)).toEqual(Array.from(vectorOf(0)));
    await withClient(url, async (client) => {
      const { rows } = await client.query<{ partitions: string; set: string; toast: string }>(
        `SELECT count(*) AS partitions, count(*) FILTER (WHERE 'toast_tuple_target=8160' = ANY (reloptions)) AS set, sum(pg_relation_size(reltoastrelid)) AS toast
           FROM pg_class WHERE relname ~ '^memories_p[0-9]+$'`,
      );
      expect(rows[0]).toEqual({ partitions: '16', set: '16', toast: '0' });
    });
  });

  it('refuses a database migrated by a newer build, changing nothing', async () => {
    const url = await freshDatabase();
    const store = new PostgresStore({ url, logger: silentLogger() });
    register(() => store.close());
    await store.init();
    const newer = MIGRATIONS.length + 1;
    await withClient(url, (client) => client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, 'from a newer memorypool')", [newer]));
    const older = new PostgresStore({ url, logger: silentLogger() });
    register(() => older.close());
    const refused = older.init();
    await expect(refused).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    await expect(refused).rejects.toThrow(`schema is at version ${newer}, migrated by a newer memorypool; this build knows versions up to ${MIGRATIONS.length}`);
    await withClient(url, async (client) => {
      expect((await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((row) => row.version)).toEqual([...MIGRATIONS.map((migration) => migration.version), newer]);
    });
  });
});
