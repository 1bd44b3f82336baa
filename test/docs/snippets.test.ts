import { execFile } from 'node:child_process';
import { mkdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { MemoryPoolClient } from '../../src/client/index.js';
import { projectRoot, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { tempDir } from '../support/helper.js';
import { assertBuilt } from '../support/replica-cluster.js';

/**
 * The README's client snippets, exactly as written there (each fenced block after a
 * `<!-- snippet: name -->` marker), run against a real server: the JavaScript ones as an
 * application's own module, with memorypool (and its optional peers) in its node_modules; the
 * Python one with clients/python/src on the path. Every snippet uses `update`: this file needs
 * issue 16's PATCH /mem/{id}.
 */

const readme = () => readFile(path.join(projectRoot, 'README.md'), 'utf8');

async function snippet(name: string): Promise<string> {
  const match = new RegExp(`<!-- snippet: ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\`\\n`).exec(await readme());
  if (!match) throw new Error(`README.md has no snippet "${name}"`);
  return match[1];
}

/** An application directory that installed memorypool, `ai` and `@langchain/core`. */
async function application(files: Record<string, string>): Promise<string> {
  const dir = await tempDir('memorypool-app-');
  await mkdir(path.join(dir, 'node_modules'));
  await symlink(projectRoot, path.join(dir, 'node_modules/memorypool'));
  for (const peer of ['ai', '@langchain']) await symlink(path.join(projectRoot, 'node_modules', peer), path.join(dir, 'node_modules', peer));
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ type: 'module' }));
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(dir, name), text);
  return dir;
}

async function run(command: string, args: string[], cwd: string, env: Record<string, string>): Promise<string[]> {
  try {
    const { stdout } = await promisify(execFile)(command, args, { cwd, env: { ...process.env, MEMORYPOOL_TOKEN: '', ...env }, timeout: 60_000 });
    return stdout.trim().split('\n');
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`${command} ${args.join(' ')} failed:\n${stdout ?? ''}\n${stderr ?? ''}`);
  }
}

/** Stands in for a real model in the AI SDK snippet: remembers, recalls, corrects, then forgets. */
const SCRIPTED_MODEL = `
import { MockLanguageModelV3 } from 'ai/test';
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const call = (toolName, input) => ({ content: [{ type: 'tool-call', toolCallId: toolName, toolName, input: JSON.stringify(input) }], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] });
export const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const results = prompt.filter((message) => message.role === 'tool').flatMap((message) => message.content);
    const stored = results.find((result) => result.toolName === 'remember')?.output.value;
    if (results.length === 0) return call('remember', { text: 'Caroline adopted a rescue dog named Max', tags: ['pets'] });
    if (results.length === 1) return call('recall', { query: 'dog', limit: 1 });
    if (results.length === 2) return call('update', { id: stored.id, text: 'Caroline adopted a rescue beagle named Max' });
    if (results.length === 3) return call('forget', { id: stored.id });
    return { content: [{ type: 'text', text: 'Done.' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
  },
});
`;

/** A real server for one test (the helpers stop it, and remove its data, after each test). */
async function serve(): Promise<ServerProcess> {
  return startServerProcess({ dataDir: await tempDir() });
}

async function nothingLeft(server: ServerProcess): Promise<void> {
  expect(await new MemoryPoolClient({ url: server.url, token: '' }).list({ user_id: 'caroline' })).toEqual([]);
}

describe('the README client snippets', () => {
  beforeAll(assertBuilt);

  it('TypeScript client', async () => {
    const server = await serve();
    const dir = await application({ 'snippet.js': await snippet('client-ts') });
    const lines = await run(process.execPath, ['snippet.js'], dir, { MEMORYPOOL_URL: server.url });
    expect(lines).toEqual([expect.stringMatching(/^Caroline adopted a rescue dog named Max \d/), 'Caroline adopted a rescue beagle named Max']);
    await nothingLeft(server);
  });

  it('Python client', async () => {
    const server = await serve();
    const pythonPath = path.join(projectRoot, 'clients/python/src');
    const lines = await run(process.env.PYTHON ?? 'python3', ['-c', await snippet('client-python')], await tempDir(), { MEMORYPOOL_URL: server.url, PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' });
    expect(lines).toEqual([expect.stringMatching(/^Caroline adopted a rescue dog named Max \d/), 'Caroline adopted a rescue beagle named Max']);
    await nothingLeft(server);
  });

  it('in-process', async () => {
    const dir = await application({ 'snippet.js': await snippet('in-process') });
    const lines = await run(process.execPath, ['snippet.js'], dir, { MEMORYPOOL_EMBEDDER: 'hash' });
    expect(lines).toEqual([expect.stringMatching(/^Caroline adopted a rescue dog named Max \d/), 'Caroline adopted a rescue beagle named Max']);
    expect((await stat(path.join(dir, 'memories/users'))).isDirectory()).toBe(true);
  });

  it('LangChain.js', async () => {
    const server = await serve();
    const dir = await application({ 'snippet.js': await snippet('langchain') });
    const lines = await run(process.execPath, ['snippet.js'], dir, { MEMORYPOOL_URL: server.url });
    expect(lines).toEqual([expect.stringMatching(/^I adopted a rescue dog named Max\. \d/), "[ 'I adopted a rescue beagle named Max.' ]"]);
    await nothingLeft(server);
  });

  it('Vercel AI SDK', async () => {
    const server = await serve();
    const dir = await application({ 'snippet.js': await snippet('ai-sdk'), 'model.js': SCRIPTED_MODEL });
    const lines = await run(process.execPath, ['snippet.js'], dir, { MEMORYPOOL_URL: server.url });
    expect(lines.map((line) => line.split(' ')[0])).toEqual(['remember', 'recall', 'update', 'forget']);
    expect(JSON.parse(lines[2].slice('update '.length))).toMatchObject({ text: 'Caroline adopted a rescue beagle named Max', user_id: 'caroline' });
    await nothingLeft(server);
  });
});
