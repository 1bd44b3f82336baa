import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { MIGRATIONS } from '../../src/store/postgres-migrations.js';
import { expectServesEarlierAnswers, type EarlierAnswers } from '../support/earlier-formats.js';
import { tempDir } from '../support/helper.js';
import { freshDatabase, withClient } from '../support/postgres.js';
import { projectRoot, request, startServerProcess } from '../support/server-process.js';

/**
 * PostgreSQL databases written by earlier builds of this repository open in this one (its
 * migrations run) and serve every memory, version and Add request id they held. Each fixture
 * under test/fixtures/postgres/<commit>/ is what that commit's server wrote to a throwaway
 * PostgreSQL, dumped as SQL (test/fixtures/make-postgres-fixtures.ts, which also saved in
 * expected.json what that build answered); they are the SQL formats the store went through:
 * migration 1, users, memories and Add requests partitioned by user (976f29a); migration 2,
 * memory_versions (72b6758); migration 3, any Unicode text and records as json (03410a9, the
 * format of today, with an updated memory's history); records holding the stored unit
 * features `fx` (a77c27a, reverted since: a field this build ignores); migrations 4 and 5,
 * the change feed's events and the webhooks' table (b0c5a0b, the schema before `user_figures`);
 * migration 6, `user_figures` (d7d3180, the schema before `memorypool_record_changes`); and
 * migrations 7 and 8, the events' function and the vectors kept in their rows (ecee9ac, the
 * schema before `memory_features`: its memories have no stored features and are derived).
 */

const FIXTURES = path.join(projectRoot, 'test/fixtures/postgres');

describe('PostgreSQL databases of earlier builds', async () => {
  const commits = (await readdir(FIXTURES)).sort();

  it('are there: one per migration the PostgreSQL store went through', () => {
    expect(commits).toEqual(['03410a9', '72b6758', '976f29a', 'a77c27a', 'b0c5a0b', 'd7d3180', 'ecee9ac']);
  });

  for (const commit of commits) {
    it(`open with every memory, version and request id of ${commit}, migrated to this build's schema`, async () => {
      const expected = JSON.parse(await readFile(path.join(FIXTURES, commit, 'expected.json'), 'utf8')) as EarlierAnswers;
      const databaseUrl = await freshDatabase();
      const dump = await readFile(path.join(FIXTURES, commit, 'dump.sql'), 'utf8');
      const before = await withClient(databaseUrl, async (client) => {
        await client.query(dump);
        return (await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((row) => row.version);
      });
      expect(before.length).toBeLessThanOrEqual(MIGRATIONS.length);

      const server = await startServerProcess({ dataDir: await tempDir(), env: { MEMORYPOOL_DATABASE_URL: databaseUrl } });
      await expectServesEarlierAnswers(server, expected);
      // A write after the upgrade is numbered on from the feed the earlier build left (migration 7's function).
      const last = await withClient(databaseUrl, async (client) => Number((await client.query<{ last_seq: string }>('SELECT last_seq FROM change_counter')).rows[0].last_seq));
      const added = await request(`${server.url}/mem`, { method: 'POST', body: { text: 'Written after the upgrade', user_id: 'caroline' } });
      expect(added.status).toBe(201);
      const changes = (await request(`${server.url}/mem/changes?after=${last}`)).body as { events: Array<{ seq: number; type: string; memory_id: string }> };
      expect(changes.events.map(({ seq, type, memory_id }) => ({ seq, type, memory_id }))).toEqual([{ seq: last + 1, type: 'added', memory_id: (added.body as { id: string }).id }]);
      expect((await server.stop()).code).toBe(0);
      const after = await withClient(databaseUrl, async (client) => (await client.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version')).rows.map((row) => row.version));
      expect(after).toEqual(MIGRATIONS.map((migration) => migration.version));
    });
  }
});
