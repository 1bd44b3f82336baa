import { describe, expect, it } from 'vitest';
import type { PostgresStore } from '../../src/store/postgres-store.js';
import { freshDatabase, storeDraft as draft, storeReplica as replica, withClient } from '../support/postgres.js';

const counts = async (store: PostgresStore) => (await store.poolFigures(Date.now())).map(({ userId, count, sessions }) => [userId, count, sessions]);

describe("PostgreSQL's /mem/stats figures (user_figures, shared by the replicas)", () => {
  it("a replica's first figures are the ones another replica measured, while each user's version holds; a write makes them stale; a deleted user's go", async () => {
    const url = await freshDatabase();
    const first = await replica(url);
    await first.append('a', [draft('a', 'one', 's1'), draft('a', 'two', 's2')]);
    await first.append('b', [draft('b', 'three')]);
    expect(await counts(first)).toEqual([['a', 2, 2], ['b', 1, 1]]);

    // A memory added behind the stores' back, the user's version left as it was: only a measure sees it.
    await withClient(url, (client) =>
      client.query(
        `INSERT INTO memories (user_id, seq, id, created_at, record, vector, model)
         SELECT user_id, 99, 'behind-the-back', created_at, (record::jsonb || '{"session_id": "s9"}'::jsonb)::json, vector, model FROM memories WHERE user_id = 'a' LIMIT 1`,
      ),
    );
    // Another replica (nothing known in its memory) reads the saved figures, measuring nobody.
    expect(await counts(await replica(url))).toEqual([['a', 2, 2], ['b', 1, 1]]);

    // A write moves a's version: the next replica measures a again, the extra line with it, and b not.
    await first.append('a', [draft('a', 'four', 's1')]);
    expect(await counts(await replica(url))).toEqual([['a', 4, 3], ['b', 1, 1]]);

    await first.deleteUser('b');
    expect(await counts(await replica(url))).toEqual([['a', 4, 3]]);
    await withClient(url, async (client) => {
      expect((await client.query("SELECT user_id FROM user_figures ORDER BY user_id")).rows).toEqual([{ user_id: 'a' }]);
    });
  });

  it('measures a pool larger than one batch a batch at a time, and a later replica reads all it saved at once', async () => {
    const url = await freshDatabase();
    const first = await replica(url);
    await first.append('seed', [draft('seed', 'a memory to copy')]);
    // 2,500 users of 1-3 memories (over two batches of 1,000), written straight into the tables.
    await withClient(url, async (client) => {
      await client.query(`INSERT INTO users (user_id, next_seq, version, memory_count) SELECT 'p' || i, 1 + i % 3, 1, 1 + i % 3 FROM generate_series(1, 2500) i`);
      await client.query(
        `INSERT INTO memories (user_id, seq, id, created_at, record, vector, model)
         SELECT 'p' || i, k, 'm' || k, m.created_at, (m.record::jsonb || jsonb_build_object('session_id', 's' || (k % 2)))::json, m.vector, m.model
           FROM generate_series(1, 2500) i CROSS JOIN generate_series(0, 2) k CROSS JOIN (SELECT * FROM memories WHERE user_id = 'seed') m
          WHERE k <= i % 3`,
      );
    });
    const expected = (i: number) => [`p${i}`, 1 + (i % 3), Math.min(2, 1 + (i % 3))];
    const pool = await counts(first);
    expect(pool).toHaveLength(2501);
    for (const i of [1, 2, 3, 999, 1000, 1001, 2500]) expect(pool).toContainEqual(expected(i));
    // Every user's figures were saved; a user's memories changed behind the back (version kept) shows the next replica read them.
    await withClient(url, (client) => client.query("DELETE FROM memories WHERE user_id = 'p2'"));
    const later = await counts(await replica(url));
    expect(later).toEqual(pool);
    await withClient(url, async (client) => {
      expect(Number((await client.query('SELECT count(*) AS n FROM user_figures')).rows[0].n)).toBe(2501);
    });
  });
});
