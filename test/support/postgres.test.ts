import { describe, expect, it } from 'vitest';
import { startThrowawayPostgres } from '../../bench/throwaway-postgres.js';
import { register } from '../helper.js';
import { freshDatabase, withClient } from './postgres.js';

describe('the PostgreSQL test harness', () => {
  it('gives each caller its own empty database', async () => {
    const [first, second] = [await freshDatabase(), await freshDatabase()];
    expect(first).not.toBe(second);
    await withClient(first, (client) => client.query('CREATE TABLE t (v int); INSERT INTO t VALUES (1)'));
    const tables = await withClient(second, (client) => client.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'"));
    expect(tables.rows[0].n).toBe(0);
  });

  it('keeps committed rows of a throwaway server across a stop and a start', async () => {
    const server = await startThrowawayPostgres({ fsync: false });
    register(() => server.destroy());
    const url = await server.createDatabase('kept');
    await withClient(url, (client) => client.query('CREATE TABLE t (v int); INSERT INTO t VALUES (42)'));
    await server.stop();
    expect(server.running).toBe(false);
    await expect(withClient(url, (client) => client.query('SELECT 1'))).rejects.toThrow(/ECONNREFUSED/);
    await server.start();
    const rows = await withClient(url, (client) => client.query('SELECT v FROM t'));
    expect(rows.rows).toEqual([{ v: 42 }]);
  });
});
