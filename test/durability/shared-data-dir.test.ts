import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, readdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { silentLogger } from '../../src/logger.js';
import { COMPILED_CLI } from '../support/compiled.js';
import { register, tempDir } from '../support/helper.js';
import { callJson } from '../support/exercise-tools.js';
import { runCli } from '../support/run-cli.js';
import { projectRoot, request, sleep, startServerProcess, type ServerProcess } from '../support/server-process.js';

/**
 * Several processes on one data directory, as users run them: `memorypool serve`, CLI commands,
 * `memorypool mcp`, and test/support/service-worker.ts (the service as the CLI opens it, writing
 * in a loop). Each sees every write another acknowledged on its next request.
 */

const worker = path.join(projectRoot, 'test/support/service-worker.ts');

interface WorkerLine {
  op: 'added' | 'deleted' | 'conversation' | 'done';
  user?: string;
  id?: string;
  text?: string;
  request?: string;
  stored?: boolean;
}

interface Worker {
  child: ChildProcess;
  lines: WorkerLine[];
  exited: Promise<number | null>;
  stderr: () => string;
}

function startWorker(dataDir: string, userIds: readonly string[], tag: string, rounds: number): Worker {
  const child = spawn(process.execPath, ['--import', 'tsx', worker, dataDir, userIds.join(','), tag, String(rounds)], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: WorkerLine[] = [];
  let buffered = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stdout!.on('data', (chunk: string) => {
    buffered += chunk;
    const complete = buffered.split('\n');
    buffered = complete.pop()!;
    for (const line of complete) if (line.trim() !== '') lines.push(JSON.parse(line) as WorkerLine);
  });
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  register(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  return { child, lines, exited, stderr: () => stderr };
}

async function until(test: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!test()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const q = (params: Record<string, string | number>) => new URLSearchParams(Object.entries(params).map(([key, value]) => [key, String(value)])).toString();

async function serverList(server: ServerProcess, userId: string): Promise<Array<{ id: string; text: string }>> {
  const listed = await request(`${server.url}/mem/list?${q({ user_id: userId, limit: 10_000 })}`);
  expect(listed.status).toBe(200);
  return listed.body;
}

/** What the workers' acknowledgements say the user holds now: ids added and not deleted, conversation texts stored once. */
function expectedFrom(workers: readonly Worker[], userId: string): { kept: Set<string>; deleted: Set<string>; conversations: Map<string, number> } {
  const added = new Set<string>();
  const deleted = new Set<string>();
  const conversations = new Map<string, number>();
  for (const { lines } of workers) {
    for (const line of lines) {
      if (line.user !== userId) continue;
      if (line.op === 'added') added.add(line.id!);
      if (line.op === 'deleted') deleted.add(line.id!);
      if (line.op === 'conversation') conversations.set(line.request!, (conversations.get(line.request!) ?? 0) + (line.stored ? 1 : 0));
    }
  }
  return { kept: new Set([...added].filter((id) => !deleted.has(id))), deleted, conversations };
}

describe('several processes on one data directory', () => {
  it('a server and CLI commands adding at once: each side counts, finds, gets and deletes the other\'s memories', async () => {
    const dataDir = await tempDir();
    const server = await startServerProcess({ dataDir });
    const [viaHttp, viaCli] = await Promise.all([
      Promise.all(Array.from({ length: 16 }, (_, i) => request(`${server.url}/mem`, { body: { text: `server memory ${i} about the harbour` } }))),
      Promise.all(Array.from({ length: 8 }, (_, i) => runCli(dataDir, ['--json', 'add', `cli memory ${i} about the lighthouse`]))),
    ]);
    expect(viaHttp.map((answer) => answer.status)).toEqual(Array(16).fill(201));
    expect(viaCli.map((run) => run.code)).toEqual(Array(8).fill(0));
    const cliIds: string[] = viaCli.map((run) => run.json.id);

    const health = (await request(`${server.url}/health`)).body.count;
    let found = 0;
    for (const [i, id] of cliIds.entries()) {
      const hits = (await request(`${server.url}/mem/search?${q({ query: `cli memory ${i} about the lighthouse`, limit: 3 })}`)).body as Array<{ id: string }>;
      if (hits.some((hit) => hit.id === id)) found++;
    }
    const got = (await Promise.all(cliIds.map((id) => request(`${server.url}/mem/${id}`)))).filter((answer) => answer.status === 200).length;
    const deletedByServer = (await request(`${server.url}/mem/${cliIds[0]}`, { method: 'DELETE' })).status;
    const cliAfterServerDelete = (await runCli(dataDir, ['--json', 'get', cliIds[0]])).code;
    const serverMemory = viaHttp[0].body.id as string;
    const cliDelete = (await runCli(dataDir, ['--json', 'delete', serverMemory])).code;
    const serverAfterCliDelete = (await request(`${server.url}/mem/${serverMemory}`)).status;
    const damaged = server.logs().filter((line) => String(line.msg).includes('damaged')).length;

    expect({
      health_counts_cli_adds: `${health} of 24`,
      search_finds_cli_memories: `${found} of 8`,
      get_of_cli_memory: got === 8 ? 200 : `${got} of 8`,
      delete_of_cli_memory: deletedByServer,
      cli_get_after_server_delete: cliAfterServerDelete,
      cli_delete_exit: cliDelete,
      server_get_after_cli_delete: serverAfterCliDelete,
      damaged_index_warnings: damaged,
    }).toEqual({
      health_counts_cli_adds: '24 of 24',
      search_finds_cli_memories: '8 of 8',
      get_of_cli_memory: 200,
      delete_of_cli_memory: 200,
      cli_get_after_server_delete: 3,
      cli_delete_exit: 0,
      server_get_after_cli_delete: 404,
      damaged_index_warnings: 0,
    });
    expect((await request(`${server.url}/health`)).body.count).toBe(22);
    expect(server.stderr()).toBe('');
  }, 120_000);

  it('a server and three writer processes adding and deleting at once lose nothing, duplicate nothing, and agree (two users, each a trial of its own)', async () => {
    const dataDir = await tempDir();
    const server = await startServerProcess({ dataDir });
    const users = ['shared-0', 'shared-1'];
    const workers = ['a', 'b', 'c'].map((tag) => startWorker(dataDir, users, tag, 12));
    // The server writes too, and reads, while the workers run.
    const serverAdded = new Map<string, string[]>(users.map((userId) => [userId, []]));
    for (let turn = 0; workers.some((w) => w.child.exitCode === null); turn++) {
      const userId = users[turn % 2];
      const mine = serverAdded.get(userId)!;
      const added = await request(`${server.url}/mem`, { body: { text: `server ${userId} ${mine.length}`, user_id: userId } });
      expect(added.status).toBe(201);
      mine.push(added.body.id);
      if (mine.length % 2 === 0) expect((await request(`${server.url}/mem/${mine.at(-2)}?${q({ user_id: userId })}`, { method: 'DELETE' })).status).toBe(200);
      expect((await request(`${server.url}/mem/search?${q({ query: 'm1', user_id: userId })}`)).status).toBe(200);
    }
    for (const w of workers) {
      expect(await w.exited, w.stderr()).toBe(0);
      expect(w.lines.at(-1)).toEqual({ op: 'done' });
    }
    let total = 0;
    const listedIds = new Map<string, string[]>();
    for (const userId of users) {
      const { kept, deleted, conversations } = expectedFrom(workers, userId);
      serverAdded.get(userId)!.forEach((id, i, all) => (i % 2 === 0 && i + 1 < all.length ? deleted.add(id) : kept.add(id)));
      const listed = await serverList(server, userId);
      const ids = listed.map((memory) => memory.id);
      expect(new Set(ids).size).toBe(ids.length);
      const conversationTexts = listed.filter((memory) => memory.text.startsWith('shared-'));
      const plain = ids.filter((id) => !conversationTexts.some((memory) => memory.id === id));
      expect(new Set(plain)).toEqual(kept);
      for (const id of deleted) expect((await request(`${server.url}/mem/${id}?${q({ user_id: userId })}`)).status).toBe(404);
      // Every shared request id was stored by exactly one writer, with both of its messages.
      for (const [requestId, stored] of conversations) {
        expect(stored).toBe(1);
        expect(conversationTexts.filter((memory) => memory.text.startsWith(`${requestId} from`))).toHaveLength(2);
      }
      expect(conversationTexts).toHaveLength(conversations.size * 2);
      total += listed.length;
      listedIds.set(userId, ids);
    }
    expect((await request(`${server.url}/health`)).body.count).toBe(total);
    expect((await request(`${server.url}/mem/stats`)).body).toMatchObject({ count: total, users: 2 });
    // The CLI, a process of its own, sees the same pool.
    const viaCli = await runCli(dataDir, ['--json', 'list', '--user', 'shared-1', '--limit', '10000']);
    expect(new Set(viaCli.json.map((memory: { id: string }) => memory.id))).toEqual(new Set(listedIds.get('shared-1')));
    expect(server.stderr()).toBe('');
  }, 90_000);

  it('a writer killed with SIGKILL at any point leaves a directory the server keeps serving and the next writer writes to', async () => {
    const dataDir = await tempDir();
    const server = await startServerProcess({ dataDir });
    const userId = 'killed';
    // First what a writer killed inside its append leaves, made by hand: its lock, and half a line.
    expect((await request(`${server.url}/mem?${q({ user_id: userId })}`, { body: { text: 'before the crash', user_id: userId } })).status).toBe(201);
    const files = new JsonlStore(dataDir, silentLogger());
    const dead = spawn(process.execPath, ['-e', '0']);
    await new Promise((resolve) => dead.once('exit', resolve));
    const lockName = `${path.basename(files.userDir(userId)).split('-').at(-1)}.lock`;
    await writeFile(path.join(dataDir, 'sync', lockName), JSON.stringify({ pid: dead.pid, host: os.hostname(), start: null, nonce: 'dead-writer' }));
    await appendFile(path.join(files.userDir(userId), 'memories.jsonl'), '{"id":"torn","user_id":"killed","te');
    expect((await request(`${server.url}/mem`, { body: { text: 'after the crash', user_id: userId } })).status).toBe(201);
    expect((await serverList(server, userId)).map((memory) => memory.text)).toEqual(['after the crash', 'before the crash']);
    expect(await readdir(path.join(dataDir, 'sync'))).not.toContain(lockName);
    expect(server.logs().some((line) => String(line.msg).includes('quarantined'))).toBe(true);

    // Then real writers, killed after a few writes, wherever they are; the server writes next.
    const finished: Array<{ tag: string; worker: Worker }> = [];
    const serverAdded = new Set<string>();
    for (const trial of [0, 1, 2]) {
      const doomed = startWorker(dataDir, [userId], `k${trial}`, 1_000);
      await until(() => doomed.lines.length >= 4 + trial * 5, 20_000, 'the writer to start writing');
      doomed.child.kill('SIGKILL');
      await doomed.exited;
      finished.push({ tag: `k${trial}`, worker: doomed });
      expect((await request(`${server.url}/mem/list?${q({ user_id: userId })}`)).status).toBe(200);
      // A lock the killed writer held is stale: the server's Add goes on at once.
      const next = await request(`${server.url}/mem`, { body: { text: `server after kill ${trial}`, user_id: userId } });
      expect(next.status).toBe(201);
      serverAdded.add(next.body.id);
    }
    const { kept, conversations } = expectedFrom(finished.map(({ worker }) => worker), userId);
    for (const id of serverAdded) kept.add(id);
    // What a killed writer had under way is there or not: the delete that follows its last Add
    // (of the memory added the round before: printed once done, so maybe done unprinted), the Add
    // of its next one (stored, maybe, but never acknowledged).
    const underWay = new Set<string>();
    for (const { tag, worker } of finished) {
      const added = worker.lines.filter((line) => line.op === 'added');
      if (added.length > 1) underWay.add(added.at(-2)!.text!);
      underWay.add(`${tag} m${added.length}`);
    }
    const listed = (await serverList(server, userId)).filter((memory) => !memory.text.includes('the crash'));
    const plain = listed.filter((memory) => !memory.text.startsWith('shared-'));
    expect(plain.filter((memory) => !kept.has(memory.id) && !underWay.has(memory.text))).toEqual([]);
    const keptMissing = [...kept].filter((id) => !plain.some((memory) => memory.id === id));
    const texts = new Map(finished.flatMap(({ worker }) => worker.lines.filter((line) => line.op === 'added').map((line) => [line.id!, line.text!] as const)));
    for (const id of serverAdded) texts.set(id, 'server');
    expect(keptMissing.filter((id) => !underWay.has(texts.get(id)!))).toEqual([]);
    // An Add cut short is never half there: each request id has both of its messages or none.
    for (const requestId of conversations.keys()) {
      expect([0, 2]).toContain(listed.filter((memory) => memory.text.startsWith(`${requestId} from`)).length);
    }
    expect((await request(`${server.url}/health`)).body.count).toBe(listed.length + 2);
    expect(server.logs().filter((line) => Number(line.level) >= 50)).toEqual([]);
  }, 90_000);

  it('memorypool mcp writing while a server reads: each side sees the other\'s writes and deletes on its next request', async () => {
    const dataDir = await tempDir();
    const server = await startServerProcess({ dataDir });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [COMPILED_CLI, 'mcp'],
      cwd: projectRoot,
      env: { ...(process.env as Record<string, string>), MEMORYPOOL_DATA_DIR: dataDir, MEMORYPOOL_EMBEDDER: 'hash' },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'memorypool-test', version: '0' });
    await client.connect(transport);
    register(() => client.close());
    for (let i = 0; i < 8; i++) {
      const [remembered, posted] = await Promise.all([
        callJson(client, 'remember', { text: `mcp note ${i} on the tide tables` }),
        request(`${server.url}/mem`, { body: { text: `server note ${i} on the ferry times` } }),
      ]);
      expect((await request(`${server.url}/mem/${remembered.id}`)).status).toBe(200);
      const hits = (await request(`${server.url}/mem/search?${q({ query: `mcp note ${i} tide tables`, limit: 3 })}`)).body as Array<{ id: string }>;
      expect(hits.map((hit) => hit.id)).toContain(remembered.id);
      expect(await callJson(client, 'get_memory', { id: posted.body.id })).toMatchObject({ id: posted.body.id });
      if (i % 2 === 0) {
        expect(await callJson(client, 'forget', { id: posted.body.id })).toEqual({ deleted: posted.body.id });
        expect((await request(`${server.url}/mem/${posted.body.id}`)).status).toBe(404);
      }
    }
    expect((await request(`${server.url}/health`)).body.count).toBe(12);
    expect(await callJson(client, 'memory_stats', {})).toMatchObject({ count: 12 });
    expect(server.stderr()).toBe('');
  }, 90_000);
});
