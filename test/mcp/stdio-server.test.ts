import { spawn } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { describe, expect, it } from 'vitest';
import { assertBuilt, COMPILED_CLI } from '../support/compiled.js';
import { register, tempDir } from '../support/helper.js';
import { freshDatabase, withClient } from '../support/postgres.js';
import { callJson, exerciseBadArguments, exerciseEveryTool } from '../support/exercise-tools.js';
import { startReceiver } from '../support/otlp-receiver.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const cli = COMPILED_CLI;

/** `memorypool mcp` as a real child process (compiled, as installed), with the test embedder. */
async function connect(dataDir: string, env: Record<string, string> = {}): Promise<{ client: Client; stderr: () => string }> {
  await assertBuilt();
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [cli, 'mcp'],
    cwd: root,
    env: { ...(process.env as Record<string, string>), MEMORYPOOL_DATA_DIR: dataDir, MEMORYPOOL_EMBEDDER: 'hash', ...env },
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (chunk) => (stderr += chunk));
  const client = new Client({ name: 'memorypool-test', version: '0' });
  await client.connect(transport);
  register(() => client.close());
  return { client, stderr: () => stderr };
}

describe('memorypool mcp (stdio)', () => {
  it('lists the tools and runs each one on the data directory', async () => {
    const dataDir = await tempDir();
    const { client } = await connect(dataDir);
    expect(client.getServerVersion()).toMatchObject({ name: 'memorypool' });
    await exerciseEveryTool(client);
  });

  it('exports each tool call as a trace of its own when an OTLP endpoint is set', async () => {
    const receiver = await startReceiver();
    const { client } = await connect(await tempDir(), { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' });
    await client.callTool({ name: 'remember', arguments: { text: 'The dog is called Max.' } });
    const tool = await receiver.waitFor((span) => span.name === 'tools/call remember');
    expect(tool.parentSpanId).toBe('');
    const add = await receiver.waitFor((span) => span.name === 'memorypool.add');
    expect(add.parentSpanId).toBe(tool.spanId);
  });

  it('answers bad arguments with tool errors carrying the API messages', async () => {
    const { client } = await connect(await tempDir());
    await exerciseBadArguments(client);
  });

  it('writes durably: a second process started after the first closed sees the memory', async () => {
    const dataDir = await tempDir();
    const first = await connect(dataDir);
    const stored = await callJson(first.client, 'remember', { text: 'The wifi password is on the fridge' });
    await first.client.close();
    const second = await connect(dataDir);
    expect(await callJson(second.client, 'get_memory', { id: stored.id })).toEqual(stored);
  });

  it('serves the PostgreSQL pool when a database URL is set, like the other data commands', async () => {
    const databaseUrl = await freshDatabase();
    const dataDir = await tempDir();
    const { client } = await connect(dataDir, { MEMORYPOOL_DATABASE_URL: databaseUrl });
    const stored = await callJson(client, 'remember', { text: 'Kept in the database, not in the folder', user_id: 'pg-user' });
    await client.close();
    const rows = await withClient(databaseUrl, async (db) => (await db.query("SELECT id FROM memories WHERE user_id = 'pg-user'")).rows);
    expect(rows.map((row) => row.id)).toEqual([stored.id]);
    expect(await readdir(dataDir)).toEqual([]);
  });

  it('answers a call sent just before stdin closes, then exits 0', async () => {
    const dataDir = await tempDir();
    const child = spawn(process.execPath, [cli, 'mcp'], { cwd: root, env: { ...process.env, MEMORYPOOL_DATA_DIR: dataDir, MEMORYPOOL_EMBEDDER: 'hash' } });
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const messages = [
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'pipe', version: '0' } } },
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'remember', arguments: { text: 'Sent with the pipe already closing' } } },
    ];
    child.stdin.end(messages.map((message) => JSON.stringify(message) + '\n').join(''));
    expect(await exited).toBe(0);
    const answers = stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(answers.map((answer) => answer.id)).toEqual([1, 2]);
    expect(JSON.parse(answers[1].result.content[0].text).text).toBe('Sent with the pipe already closing');
  });
});
