import { chmod, cp, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { installedBinaries, startThrowawayPostgres } from '../../bench/throwaway-postgres.js';
import { register } from './helper.js';
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

  it('starts from binaries in a folder only their owner can enter (a checkout in root\'s mktemp -d), and names what is missing', async () => {
    const hidden = await mkdtemp(path.join(os.tmpdir(), 'memorypool-hidden-'));
    register(() => rm(hidden, { recursive: true, force: true }));
    const copies = await mkdtemp(path.join(os.tmpdir(), 'memorypool-pg-copies-'));
    register(() => rm(copies, { recursive: true, force: true }));
    await chmod(copies, 0o755);
    const binaries = path.join(hidden, 'native');
    await cp(installedBinaries().dir, binaries, { recursive: true, verbatimSymlinks: true });

    const server = await startThrowawayPostgres({ fsync: false, binaries, copiesIn: copies });
    register(() => server.destroy());
    const rows = await withClient(server.url(), (client) => client.query('SELECT 40 + 2 AS n'));
    expect(rows.rows).toEqual([{ n: 42 }]);
    // As root the server runs as an unprivileged user, who cannot enter `hidden`: it ran from a copy.
    if (process.getuid?.() === 0) expect(await readdir(copies)).toHaveLength(1);

    await expect(startThrowawayPostgres({ binaries: path.join(hidden, 'missing') })).rejects.toThrow(/no PostgreSQL binaries at .*missing/);
  });
});
