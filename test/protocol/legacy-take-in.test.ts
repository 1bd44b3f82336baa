import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { takeInLegacyMemories } from '../../src/protocol/legacy-take-in.js';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { silentLogger } from '../../src/logger.js';
import { openService, tempDir } from '../support/helper.js';
import { request, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { LEGACY_DUPLICATE_LINE, LEGACY_GOOD, LEGACY_MALFORMED_LINES, legacyFileText } from '../support/memorypool-file.js';

/**
 * A new user who already has the MemoryPool tool's `memories.jsonl` points memorypool at that
 * directory: the memories are there from the first request, once, and the file stays as it was.
 */

async function legacyDataDir(): Promise<{ dataDir: string; file: string; bytes: Buffer }> {
  const dataDir = await tempDir('memorypool-legacy-');
  const file = path.join(dataDir, 'memories.jsonl');
  await writeFile(file, legacyFileText());
  return { dataDir, file, bytes: await readFile(file) };
}

const takeInLogs = (server: ServerProcess) => server.logs().filter((record) => /^took in the MemoryPool memories file/.test(String(record.msg)));

async function listDefault(server: ServerProcess): Promise<Array<Record<string, unknown>>> {
  const response = await request(`${server.url}/mem/list?limit=100`);
  expect(response.status, response.text).toBe(200);
  return response.body;
}

/** The default user's stored lines, read from its file (what a restart would load). */
async function storedLines(dataDir: string): Promise<Array<{ id: string }>> {
  const file = path.join(new JsonlStore(dataDir, silentLogger()).userDir('default'), 'memories.jsonl');
  return (await readFile(file, 'utf8')).trim().split('\n').map((line) => JSON.parse(line));
}

describe('taking in the MemoryPool memories file', () => {
  it('a server on the directory finds the memories by search with their fields, logs one line, leaves the file untouched and never takes it in again', async () => {
    const { dataDir, file, bytes } = await legacyDataDir();
    const server = await startServerProcess({ dataDir });

    expect(takeInLogs(server)).toHaveLength(1);
    expect(takeInLogs(server)[0]).toMatchObject({ file, imported: 3, malformed: 6, duplicates: 1, already_stored: 0 });
    const warned = server.logs().filter((record) => record.level === 40 && record.file === file && record.line !== undefined);
    expect(warned.map((record) => record.line).sort((a, b) => Number(a) - Number(b))).toEqual([...LEGACY_MALFORMED_LINES, LEGACY_DUPLICATE_LINE].sort((a, b) => a - b));

    const search = await request(`${server.url}/mem/search?q=${encodeURIComponent('what is the dog called')}&limit=3`);
    expect(search.status, search.text).toBe(200);
    expect(search.body[0]).toMatchObject({ ...LEGACY_GOOD[0], user_id: 'default' });
    const paint = await request(`${server.url}/mem/search?q=sunsets&tag=art`);
    expect(paint.body.map((hit: { id: string }) => hit.id)).toEqual(['mem-paint']);
    const listed = await listDefault(server);
    expect(listed.map((memory) => memory.id).sort()).toEqual(['mem-dog', 'mem-paint', 'mem-wifi']);
    expect(listed.find((memory) => memory.id === 'mem-paint')).toEqual({ ...LEGACY_GOOD[2], created_at: '2023-07-15T08:30:00.000Z', user_id: 'default', version: 1, updated_at: '2023-07-15T08:30:00.000Z', metadata: {} });
    expect(listed.find((memory) => memory.id === 'mem-wifi')).toMatchObject({ tags: [], importance: 0.5, source: 'cli' });
    // The legacy time is the memory's time: decay (from the user's newest memory, mem-wifi's take-in time) weighs the older one less.
    const explained = await request(`${server.url}/mem/search?q=${encodeURIComponent('dog wifi sunsets')}&limit=10&explain=true`);
    const decayOf = (id: string): number => explained.body.find((hit: { id: string }) => hit.id === id).explanation.terms.find((term: { term: string }) => term.term === 'decay').value;
    expect(decayOf('mem-paint')).toBeLessThan(decayOf('mem-dog'));
    expect(decayOf('mem-dog')).toBeLessThan(1);

    // A memory deleted after the take-in stays deleted: the file is not read again.
    expect((await request(`${server.url}/mem/mem-paint`, { method: 'DELETE' })).status).toBe(200);
    expect(await server.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    const restarted = await startServerProcess({ dataDir });
    expect(takeInLogs(restarted)).toEqual([]);
    expect((await listDefault(restarted)).map((memory) => memory.id).sort()).toEqual(['mem-dog', 'mem-wifi']);
    expect(await restarted.stop('SIGTERM')).toEqual({ code: 0, signal: null });

    expect((await readFile(file)).equals(bytes)).toBe(true);
    expect((await readdir(dataDir)).sort()).toEqual(['format.json', 'memories.jsonl', 'memories.jsonl.imported', 'sync', 'users']);
    expect(JSON.parse(await readFile(`${file}.imported`, 'utf8'))).toMatchObject({ bytes: bytes.length, imported: 3, malformed: 6, duplicates: 1 });
  });

  it('two servers opening the directory at once take it in once', async () => {
    const dataDir = await tempDir('memorypool-legacy-');
    // Long enough to take in that the second server opens while the first is at it.
    const ids = Array.from({ length: 6000 }, (_, i) => `bulk-${i}`);
    await writeFile(path.join(dataDir, 'memories.jsonl'), ids.map((id, i) => JSON.stringify({ id, text: `Note ${i} about the allotment and its ${i % 7} rows of beans` })).join('\n') + '\n');
    const servers = await Promise.all([startServerProcess({ dataDir, startTimeoutMs: 60_000 }), startServerProcess({ dataDir, startTimeoutMs: 60_000 })]);
    expect(servers.flatMap(takeInLogs)).toHaveLength(1);
    for (const server of servers) expect(await server.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect((await storedLines(dataDir)).map((record) => record.id)).toEqual(ids);
  });

  it('after a take-in cut short (its claim left by a dead process, some ids stored), the next open stores only the rest', async () => {
    const { dataDir, file } = await legacyDataDir();
    const service = await openService({ dataDir });
    await service.importRecords([{ ...LEGACY_GOOD[0], user_id: 'default' }]);
    const gone = spawn(process.execPath, ['-e', '']);
    await once(gone, 'exit');
    await writeFile(`${file}.importing`, JSON.stringify({ pid: gone.pid, token: 'left-behind' }) + '\n');

    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
    expect(await takeInLegacyMemories(service, logger)).toEqual({ imported: 2, already_stored: 1, malformed: 6, duplicates: 1 });
    expect(await takeInLegacyMemories(service, logger)).toBeNull();
    expect((await readdir(dataDir)).sort()).toEqual(['format.json', 'memories.jsonl', 'memories.jsonl.imported', 'sync', 'users']);
    await service.close();
    expect((await storedLines(dataDir)).map((record) => record.id).sort()).toEqual(['mem-dog', 'mem-paint', 'mem-wifi']);
  });
});
