import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { assertBuilt, COMPILED_CLI } from '../support/compiled.js';
import { tempDir } from '../support/helper.js';
import { LEGACY_DUPLICATE_LINE, LEGACY_GOOD, LEGACY_MALFORMED_LINES, legacyFileText } from '../support/memorypool-file.js';
import { freshDatabase } from '../support/postgres.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The real command (compiled, as installed) with the test embedder; stdout parsed as JSON. */
async function run(args: string[], env: Record<string, string> = {}): Promise<{ code: number | null; json: any; stderr: string }> {
  await assertBuilt();
  const child = spawn(process.execPath, [COMPILED_CLI, '--json', ...args], { cwd: root, env: { ...process.env, MEMORYPOOL_EMBEDDER: 'hash', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const closed = once(child, 'close');
  const [stdout, stderr] = await Promise.all([text(child.stdout), text(child.stderr)]);
  const [code] = (await closed) as [number | null];
  return { code, json: stdout.trim() === '' ? undefined : JSON.parse(stdout), stderr };
}

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  let out = '';
  for await (const chunk of stream) out += chunk;
  return out;
}

describe('moving a pool from the JSONL store to PostgreSQL', () => {
  it('exports from a data directory, imports with --database-url (repeatable), and the data commands then read PostgreSQL', async () => {
    const dataDir = await tempDir();
    const databaseUrl = await freshDatabase();
    const file = path.join(await tempDir(), 'pool.jsonl');
    const jsonl = ['--data-dir', dataDir];
    expect((await run([...jsonl, 'add', 'The wifi password is hunter2', '--user', 'ana', '--tags', 'home'])).code).toBe(0);
    expect((await run([...jsonl, 'add', 'Ben parks on level three', '--user', 'ben'])).code).toBe(0);
    const exported = await run([...jsonl, 'export', '--out', file]);
    expect(exported.json).toMatchObject({ exported: 2, users: 2 });
    expect((await readFile(file, 'utf8')).trim().split('\n')).toHaveLength(2);

    const imported = await run(['import', file, '--database-url', databaseUrl]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.json).toEqual({ imported: 2, skipped: 0, reembedded: 0, malformed: 0, duplicates: 0 });
    expect((await run(['import', file, '--database-url', databaseUrl])).json).toEqual({ imported: 0, skipped: 2, reembedded: 0, malformed: 0, duplicates: 0 });

    const searched = await run(['--database-url', databaseUrl, 'search', 'wifi password', '--user', 'ana']);
    expect(searched.json[0]).toMatchObject({ text: 'The wifi password is hunter2', tags: ['home'] });
    // The environment variable selects the store as well.
    const stats = await run(['stats'], { MEMORYPOOL_DATABASE_URL: databaseUrl, MEMORYPOOL_DATA_DIR: await tempDir() });
    expect(stats.json).toMatchObject({ count: 2, users: 2 });
  });

  it('carries versions: an updated memory arrives with its version, metadata and history', async () => {
    const dataDir = await tempDir();
    const databaseUrl = await freshDatabase();
    const file = path.join(await tempDir(), 'pool.jsonl');
    const ben = await run(['--data-dir', dataDir, 'add', 'Ben parks on level two', '--user', 'ben', '--meta', 'floor=2']);
    expect((await run(['--data-dir', dataDir, 'update', ben.json.id, '--text', 'Ben parks on level three', '--meta', 'floor=3', '--user', 'ben'])).code).toBe(0);
    expect((await run(['--data-dir', dataDir, 'export', '--out', file])).json).toMatchObject({ exported: 1 });
    expect((await run(['import', file, '--database-url', databaseUrl])).json).toEqual({ imported: 1, skipped: 0, reembedded: 0, malformed: 0, duplicates: 0 });
    const history = await run(['--database-url', databaseUrl, 'history', ben.json.id, '--user', 'ben']);
    expect(history.json.versions.map((version: { version: number; text: string; metadata: object }) => [version.version, version.text, version.metadata])).toEqual([
      [1, 'Ben parks on level two', { floor: 2 }],
      [2, 'Ben parks on level three', { floor: 3 }],
    ]);
  });
});

describe('importing a MemoryPool memories file', () => {
  it('imports the good lines for the default user or --user-id, skips each malformed and duplicate line with a warning naming it, and can be repeated', async () => {
    const dataDir = await tempDir();
    const file = path.join(await tempDir(), 'memories.jsonl');
    await writeFile(file, legacyFileText());
    const jsonl = ['--data-dir', dataDir];

    const imported = await run([...jsonl, 'import', file]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.json).toEqual({ imported: 3, skipped: 0, reembedded: 3, malformed: 6, duplicates: 1 });
    for (const line of LEGACY_MALFORMED_LINES) expect(imported.stderr).toContain(`${file}:${line}: malformed line skipped`);
    expect(imported.stderr).toContain(`${file}:${LEGACY_DUPLICATE_LINE}: duplicate line skipped (id "mem-dog" already on line 1)`);
    const dog = await run([...jsonl, 'get', 'mem-dog']);
    expect(dog.json).toEqual({ ...LEGACY_GOOD[0], user_id: 'default', version: 1, updated_at: LEGACY_GOOD[0].created_at, metadata: {} });

    const forAna = await run([...jsonl, 'import', file, '--user-id', 'ana']);
    expect(forAna.json).toMatchObject({ imported: 3, skipped: 0 });
    const searched = await run([...jsonl, 'search', 'sunsets by the lake', '--user', 'ana']);
    expect(searched.json[0]).toMatchObject({ ...LEGACY_GOOD[2], created_at: '2023-07-15T08:30:00.000Z', user_id: 'ana' });
    expect((await run([...jsonl, 'import', file])).json).toMatchObject({ imported: 0, skipped: 3 });
    expect((await run([...jsonl, 'stats'])).json).toMatchObject({ count: 6, users: 2 });

    const blankUser = await run([...jsonl, 'import', file, '--user-id', ' ']);
    expect(blankUser.code).toBe(2);
  });
});

describe('moving text PostgreSQL could not hold before', () => {
  it('an export holding NUL characters imports into PostgreSQL and comes back byte for byte; a line that is not valid Unicode is skipped, saying why', async () => {
    const dataDir = await tempDir();
    const databaseUrl = await freshDatabase();
    const dir = await tempDir();
    const [source, fromJsonl, fromPostgres] = ['source.jsonl', 'jsonl.jsonl', 'postgres.jsonl'].map((name) => path.join(dir, name));
    const user = 'ana\u0000\uFDD0';
    const lines = [
      { id: 'm\u00001', user_id: user, text: 'NUL \u0000 inside, the escape \uFDD0 and \uFDD00, a literal \\u0000', tags: ['t\u0000'], importance: 0.5, source: 'cli', created_at: '2024-05-01T10:00:00.000Z', metadata: { 'k\u0000': 'v\u0000', n: 2 } },
      { id: 'm-lone', user_id: user, text: 'a lone \ud800 surrogate', created_at: '2024-05-01T10:00:00.000Z' },
      { id: 'm-3', user_id: user, text: 'ends with NUL\u0000', created_at: '-200000-01-01T00:00:00.000Z', session_id: 's\u0000', role: 'Caroline' },
    ];
    await writeFile(source, lines.map((line) => JSON.stringify(line)).join('\n') + '\n');

    const intoJsonl = await run(['--data-dir', dataDir, 'import', source]);
    expect(intoJsonl.json).toMatchObject({ imported: 2, malformed: 1 });
    expect(intoJsonl.stderr).toContain(`${source}:2: malformed line skipped (text: must be valid Unicode text: a lone surrogate at character 7)`);
    expect((await run(['--data-dir', dataDir, 'export', '--out', fromJsonl])).json).toMatchObject({ exported: 2 });
    const exported = await readFile(fromJsonl, 'utf8');
    expect(exported).toContain('\\u0000');

    const intoPostgres = await run(['import', fromJsonl, '--database-url', databaseUrl]);
    expect(intoPostgres.json, intoPostgres.stderr).toEqual({ imported: 2, skipped: 0, reembedded: 0, malformed: 0, duplicates: 0 });
    expect((await run(['--database-url', databaseUrl, 'export', '--out', fromPostgres])).json).toMatchObject({ exported: 2 });
    expect(await readFile(fromPostgres, 'utf8')).toBe(exported);
  });
});
