import { execFile, spawn } from 'node:child_process';
import { mkdir, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { MemoryPoolClient } from 'memorypool-client';
import { freePort, projectRoot, startServerProcess, type ServerProcess } from '../support/server-process.js';
import { register, sleep, tempDir } from '../support/helper.js';
import { assertBuilt } from '../support/compiled.js';
import { documents, expectSnippetOutput, SCRIPTED_MODEL, snippet } from '../support/snippets.js';

/**
 * The code blocks of the README and docs/, exactly as written there (each fenced block after a
 * `<!-- snippet: name -->` marker), run against a real server: the JavaScript ones as an
 * application's own module, with memorypool (and its optional peers) in its node_modules; the
 * Python one with clients/python/src on the path; the shell one with bash, its curl calls aimed
 * at the test's server.
 */

/** The JSON values of curl's output, which ends no answer with a newline. */
function jsonValues(text: string): any[] {
  const values: any[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (char === '\\') i++;
      else if (char === '"') inString = false;
    } else if (char === '"') inString = true;
    else if (char === '{' || char === '[') {
      if (depth++ === 0) start = i;
    } else if ((char === '}' || char === ']') && --depth === 0) values.push(JSON.parse(text.slice(start, i + 1)));
  }
  return values;
}

/** The snippets this file runs, by name. */
const RUN = ['quick-start', 'where-curl', 'batch-curl', 'multi-user-curl', 'client-ts', 'client-python', 'in-process', 'langchain', 'ai-sdk', 'webhook-receiver-ts', 'webhook-receiver-python'];
/** Languages whose blocks are programs a reader runs as they are (the rest: layouts, configuration, shell steps that need a host). */
const RUNNABLE = new Set(['js', 'javascript', 'ts', 'typescript', 'python', 'py']);

/** An application directory that installed memorypool (with memorypool-client, its dependency), `ai` and `@langchain/core`. */
async function application(files: Record<string, string>): Promise<string> {
  const dir = await tempDir('memorypool-app-');
  await mkdir(path.join(dir, 'node_modules'));
  await symlink(projectRoot, path.join(dir, 'node_modules/memorypool'));
  await symlink(path.join(projectRoot, 'packages/client'), path.join(dir, 'node_modules/memorypool-client'));
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

/** A real server for one test (the helpers stop it, and remove its data, after each test). */
async function serve(): Promise<ServerProcess> {
  return startServerProcess({ dataDir: await tempDir() });
}

/** A long-running snippet (a webhook receiver) as a child process: its stdout lines so far; killed after the test. */
function background(command: string, args: string[], cwd: string, env: Record<string, string>): { lines: () => string[]; stderr: () => string } {
  const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  register(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  });
  return { lines: () => stdout.split('\n').filter(Boolean), stderr: () => stderr };
}

async function nothingLeft(server: ServerProcess): Promise<void> {
  expect(await new MemoryPoolClient({ url: server.url, token: '' }).list({ user_id: 'caroline' })).toEqual([]);
}

describe('the code blocks of the README and docs/', () => {
  beforeAll(assertBuilt);

  it('marks every JavaScript and Python block as a snippet, and runs every snippet marked', async () => {
    const unmarked: string[] = [];
    const marked: string[] = [];
    for (const { file, text } of await documents()) {
      for (const match of text.matchAll(/(<!-- snippet: ([\w-]+) -->\n)?```(\w*)\n/g)) {
        if (match[2]) marked.push(match[2]);
        else if (RUNNABLE.has(match[3])) unmarked.push(`${file}: a ${match[3]} block at offset ${match.index}`);
      }
    }
    expect(unmarked).toEqual([]);
    expect(marked.sort()).toEqual([...RUN].sort());
  });

  it('quick start (curl)', async () => {
    const server = await serve();
    const script = (await snippet('quick-start')).replaceAll('localhost:8751', server.url.replace('http://', ''));
    const answers = jsonValues((await run('bash', ['-e', '-c', script], await tempDir(), {})).join('\n'));
    const [health, remembered, found, added, searched] = answers;
    expect(health).toMatchObject({ ok: true, service: 'memorypool', count: 0 });
    expect(remembered).toMatchObject({ text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], user_id: 'default', version: 1 });
    expect(found[0]).toMatchObject({ id: remembered.id, text: remembered.text });
    expect(added).toEqual({ success: true, request_id: 'r1', user_id: 'conv-1', session_id: 's1' });
    expect(searched.data[0]).toMatchObject({ content: '[2023-05-08 13:56] Caroline: I went to a support group yesterday.', created_at: '2023-05-08T13:56:00.000Z' });
    expect(answers).toHaveLength(5);
  });

  it('filter expressions (curl)', async () => {
    const server = await serve();
    const script = (await snippet('where-curl')).replaceAll('localhost:8751', server.url.replace('http://', ''));
    const [stored, found, refused] = jsonValues((await run('bash', ['-e', '-c', script], await tempDir(), {})).join('\n'));
    expect(stored).toMatchObject({ agent_id: 'ops-bot', metadata: { project: 'styx' } });
    expect(found.map((hit: { id: string }) => hit.id)).toEqual([stored.id]);
    expect(refused.error).toBe('where.$or[1].importance: must be a number');
  });

  it('batch writes (curl)', async () => {
    const server = await serve();
    const script = (await snippet('batch-curl')).replaceAll('localhost:8751', server.url.replace('http://', ''));
    const [answer] = jsonValues((await run('bash', ['-e', '-c', script], await tempDir(), {})).join('\n'));
    expect(answer.results.map((result: { status: number }) => result.status)).toEqual([201, 201, 400, 404]);
    expect(answer.results[2].error).toBe('operations[2].text: is required');
    expect(await new MemoryPoolClient({ url: server.url, token: '' }).list({ user_id: 'alice' })).toHaveLength(2);
  });

  it('several users at once (curl)', async () => {
    const server = await serve();
    const script = (await snippet('multi-user-curl')).replaceAll('localhost:8751', server.url.replace('http://', ''));
    const [ann, team, found, page] = jsonValues((await run('bash', ['-e', '-c', script], await tempDir(), {})).join('\n'));
    expect(found.map((hit: { id: string; user_id: string }) => [hit.id, hit.user_id]).sort()).toEqual([[ann.id, 'ann'], [team.id, 'team']].sort());
    expect(page.memories.map((memory: { id: string }) => memory.id)).toEqual([team.id]);
    expect(page.next_cursor).toEqual(expect.any(String));
  });

  it('TypeScript client', async () => {
    const server = await serve();
    const dir = await application({ 'snippet.js': await snippet('client-ts') });
    expectSnippetOutput('client-ts', await run(process.execPath, ['snippet.js'], dir, { MEMORYPOOL_URL: server.url }));
    await nothingLeft(server);
  });

  it('Python client', async () => {
    const server = await serve();
    const pythonPath = path.join(projectRoot, 'clients/python/src');
    const lines = await run(process.env.PYTHON ?? 'python3', ['-c', await snippet('client-python')], await tempDir(), { MEMORYPOOL_URL: server.url, PYTHONPATH: pythonPath, PYTHONDONTWRITEBYTECODE: '1' });
    expectSnippetOutput('client-python', lines);
    await nothingLeft(server);
  });

  it('in-process', async () => {
    const dir = await application({ 'snippet.js': await snippet('in-process') });
    expectSnippetOutput('in-process', await run(process.execPath, ['snippet.js'], dir, { MEMORYPOOL_EMBEDDER: 'hash' }));
    expect((await stat(path.join(dir, 'memories/users'))).isDirectory()).toBe(true);
  });

  it('LangChain.js', async () => {
    const server = await serve();
    const dir = await application({ 'snippet.js': await snippet('langchain') });
    expectSnippetOutput('langchain', await run(process.execPath, ['snippet.js'], dir, { MEMORYPOOL_URL: server.url }));
    await nothingLeft(server);
  });

  it('Vercel AI SDK', async () => {
    const server = await serve();
    const dir = await application({ 'snippet.js': await snippet('ai-sdk'), 'model.js': SCRIPTED_MODEL });
    expectSnippetOutput('ai-sdk', await run(process.execPath, ['snippet.js'], dir, { MEMORYPOOL_URL: server.url }));
    await nothingLeft(server);
  });

  it('webhook receivers (TypeScript and Python): each verifies the signature of a real delivery and refuses a forged one', async () => {
    const secret = 'whsec_snippet_secret';
    const [tsPort, pyPort] = [await freePort(), await freePort()];
    const dir = await tempDir();
    await writeFile(path.join(dir, 'receiver.ts'), await snippet('webhook-receiver-ts'));
    // tsx, from the repository (the working directory), runs the TypeScript as written.
    const tsReceiver = background(process.execPath, ['--import', 'tsx', path.join(dir, 'receiver.ts')], projectRoot, { WEBHOOK_SECRET: secret, PORT: String(tsPort) });
    const pyReceiver = background(process.env.PYTHON ?? 'python3', ['-c', await snippet('webhook-receiver-python')], dir, { WEBHOOK_SECRET: secret, PORT: String(pyPort) });
    const hooksFile = path.join(dir, 'hooks.json');
    await writeFile(hooksFile, JSON.stringify([`http://127.0.0.1:${tsPort}/`, `http://127.0.0.1:${pyPort}/`].map((url) => ({ url, secret }))));
    // Retries every few ms until the receivers listen.
    const server = await startServerProcess({ dataDir: await tempDir(), env: { MEMORYPOOL_WEBHOOKS_FILE: hooksFile, MEMORYPOOL_WEBHOOKS_RETRY_MS: '20' } });
    await new MemoryPoolClient({ url: server.url, token: '' }).remember({ text: 'Caroline adopted a rescue dog named Max', user_id: 'caroline' });
    for (const receiver of [tsReceiver, pyReceiver]) {
      await expect.poll(() => receiver.lines(), { timeout: 20_000 }).toEqual(['added caroline Caroline adopted a rescue dog named Max']);
    }
    for (const port of [tsPort, pyPort]) {
      const body = JSON.stringify({ id: 'forged:1', type: 'deleted', user_id: 'caroline' });
      const forged = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body, headers: { 'memorypool-signature': `t=${Math.floor(Date.now() / 1000)},v1=${'0'.repeat(64)}` } });
      expect(forged.status, String(port)).toBe(400);
    }
    await sleep(100);
    expect(tsReceiver.lines()).toHaveLength(1);
    expect(pyReceiver.lines()).toHaveLength(1);
  });
});
