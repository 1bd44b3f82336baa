import { execFile } from 'node:child_process';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { mkdir, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot, startServerProcess } from '../support/server-process.js';
import { expectSnippetOutput, SCRIPTED_MODEL, snippet } from '../support/snippets.js';
import { writeTinyBert } from '../support/tiny-bert.js';

/**
 * memorypool as a user gets it: `npm pack` here (which runs `prepare`: the build and the model),
 * the tarball installed into a new application folder with the npm and Node on PATH, and then
 * everything run from that folder, never from the repository: `memorypool serve` with the packaged
 * encoder, an Add and a Search, the client, openMemoryPool, LangChain and AI SDK snippets of the
 * docs, and the one-line refusals when the native index or the model is missing; then the same
 * tarball installed globally. Packages come from the npm cache the repository's own install
 * filled (`--prefer-offline`: the registry is asked only for package metadata not in the cache);
 * no install script may download anything.
 *
 * Slow (a pack and two installs, each compiling hnswlib-node): it is not part of `npm test` but
 * its own run, `npx vitest run --config vitest.package.config.ts`, on both legs of `.ci/run`.
 */

const manifest = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> };

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end; npm's lifecycle variables from `npm test` are dropped, so npm acts as in a user's shell. */
function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}, timeoutMs = 600_000): Promise<Ran> {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^npm_(lifecycle|package|command|execpath|node_execpath)/.test(key)));
  return new Promise((resolve) => {
    execFile(command, args, { cwd, env: { ...inherited, MEMORYPOOL_TOKEN: '', ...env }, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof (error as { code?: unknown }).code === 'number' ? ((error as { code: number }).code) : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The transcript the issue asks for: each command and the last lines it printed. */
function transcript(label: string, ran: Ran, lines = 4): void {
  const tail = `${ran.stdout}\n${ran.stderr}`.trim().split('\n').filter(Boolean).slice(-lines);
  console.log(`$ ${label}   (exit ${ran.code})\n${tail.map((line) => `  ${line}`).join('\n')}`);
}

function expectOk(ran: Ran, what: string): void {
  if (ran.code !== 0) throw new Error(`${what} failed (exit ${ran.code}):\n${ran.stdout}\n${ran.stderr}`);
}

const npmMajor = async (cwd: string): Promise<number> => Number((await run('npm', ['--version'], cwd)).stdout.trim().split('.')[0]);

let work: string;
let tarball: string;
let app: string;
let files: string[];

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'memorypool-package-'));
  console.log(`node ${process.version}, npm ${(await run('npm', ['--version'], work)).stdout.trim()}`);
  const packed = await run('npm', ['pack', '--pack-destination', work, '--no-audit', '--no-fund'], projectRoot);
  transcript('npm pack', packed);
  expectOk(packed, 'npm pack');
  tarball = path.join(work, `memorypool-${manifest.version}.tgz`);
  files = (await run('tar', ['-tzf', tarball], work)).stdout.trim().split('\n').map((entry) => entry.replace(/^package\//, ''));

  app = path.join(work, 'app');
  await mkdir(app);
  // On npm 12 the one step beyond the install the README gives: allow hnswlib-node's build.
  await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'fresh-app', private: true, type: 'module', allowScripts: { 'hnswlib-node': true } }, null, 2));
  const peers = ['@langchain/core', 'ai'].map((name) => `${name}@${manifest.devDependencies[name]}`);
  const installed = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', tarball, ...peers], app);
  transcript(`npm install ./memorypool-${manifest.version}.tgz ${peers.join(' ')}`, installed, 8);
  expectOk(installed, 'npm install of the tarball');
}, 900_000);

afterAll(async () => {
  if (work) await rm(work, { recursive: true, force: true });
});

describe('the package installed in a fresh application', () => {
  it('holds the compiled code, the model, the console and the docs, and no tests, bench, eval or sources', () => {
    for (const file of ['dist/src/cli/memorypool.js', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/client/index.js', 'src/console/index.html', 'models/use-lite/config.json', 'models/use-lite/tokenizer.json', 'models/use-lite/onnx/model_int8.onnx', 'models/use-lite/onnx/model.onnx', 'README.md', 'LICENSE', 'CHANGELOG.md', 'package.json']) {
      expect(files, file).toContain(file);
    }
    expect(files.filter((file) => /^(test|bench|eval|scripts|clients|docs|dist\/(test|bench|eval|scripts))\//.test(file))).toEqual([]);
    expect(files.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))).toEqual([]);
    expect(files.filter((file) => file.endsWith('.map'))).toEqual([]);
  });

  it('installs without sharp or transformers.js, with hnswlib-node built', () => {
    const modules = path.join(app, 'node_modules');
    expect(existsSync(path.join(modules, 'sharp'))).toBe(false);
    expect(existsSync(path.join(modules, '@xenova/transformers'))).toBe(false);
    expect(existsSync(path.join(modules, 'hnswlib-node/build/Release/addon.node'))).toBe(true);
  });

  it('says its version', async () => {
    const ran = await run(path.join(app, 'node_modules/.bin/memorypool'), ['--version'], app);
    transcript('npx memorypool --version', ran, 1);
    expect(ran).toMatchObject({ code: 0, stdout: `${manifest.version}\n` });
  });

  it('serves an Add and a Search with the packaged encoder, and the client, LangChain and AI SDK snippets run against it', async () => {
    const server = await startServerProcess({
      dataDir: path.join(work, 'served'),
      entry: realpathSync(path.join(app, 'node_modules/.bin/memorypool')),
      args: ['serve'],
      cwd: app,
      env: { MEMORYPOOL_EMBEDDER: 'onnx' },
      startTimeoutMs: 60_000,
    });
    const health = (await (await fetch(`${server.url}/health`)).json()) as Record<string, unknown>;
    expect(health).toEqual({ ok: true, service: 'memorypool', version: manifest.version, count: 0 });
    const post = async (route: string, body: unknown) => (await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
    expect(await post('/add', { request_id: 'r1', user_id: 'conv-1', session_id: 's1', messages: [{ role: 'Caroline', content: 'I went to a support group yesterday.', timestamp: 1683554160000 }] })).toEqual({ success: true, request_id: 'r1', user_id: 'conv-1', session_id: 's1' });
    const searched = (await post('/search', { query: 'What did Caroline attend?', user_id: 'conv-1', top_k: 5 })) as { data: Array<{ content: string }> };
    expect(searched.data[0]?.content).toBe('[2023-05-08 13:56] Caroline: I went to a support group yesterday.');
    console.log(`$ memorypool serve; POST /add; POST /search\n  ${JSON.stringify(health)}\n  ${JSON.stringify(searched.data[0])}`);

    await writeFile(path.join(app, 'model.js'), SCRIPTED_MODEL);
    for (const name of ['client-ts', 'langchain', 'ai-sdk'] as const) {
      await writeFile(path.join(app, `${name}.js`), await snippet(name));
      const ran = await run(process.execPath, [`${name}.js`], app, { MEMORYPOOL_URL: server.url }, 60_000);
      transcript(`node ${name}.js`, ran, 2);
      expectOk(ran, name);
      expectSnippetOutput(name, ran.stdout.trim().split('\n'));
    }
    expect((await server.stop()).code).toBe(0);
  }, 180_000);

  it('runs openMemoryPool in the application with the packaged encoder', async () => {
    await writeFile(path.join(app, 'in-process.js'), await snippet('in-process'));
    const ran = await run(process.execPath, ['in-process.js'], app, {}, 60_000);
    transcript('node in-process.js', ran, 2);
    expectOk(ran, 'in-process');
    expectSnippetOutput('in-process', ran.stdout.trim().split('\n'));
    expect(existsSync(path.join(app, 'memories/users'))).toBe(true);
  }, 90_000);

  it('refuses to serve in one line when hnswlib-node was not built', async () => {
    const build = path.join(app, 'node_modules/hnswlib-node/build');
    await rename(build, `${build}.away`);
    try {
      const ran = await run(path.join(app, 'node_modules/.bin/memorypool'), ['serve', '--port', '0'], app, { MEMORYPOOL_DATA_DIR: path.join(work, 'unbuilt') }, 30_000);
      transcript('npx memorypool serve   # hnswlib-node not built', ran, 1);
      expect(ran.code).toBe(1);
      expect(ran.stdout.trim().split('\n')).toHaveLength(1);
      const reason = (JSON.parse(ran.stdout) as { detail: { reason: string } }).detail.reason;
      expect(reason).toContain(`hnswlib-node's native build is missing`);
      expect(reason).toContain('"allowScripts": {"hnswlib-node": true}');
      expect(ran.stderr).toBe('');
    } finally {
      await rename(`${build}.away`, build);
    }
  });

  it('says in one line what to do when the model is missing', async () => {
    const model = path.join(app, 'node_modules/memorypool/models/use-lite');
    await rename(model, `${model}.away`);
    try {
      const ran = await run(path.join(app, 'node_modules/.bin/memorypool'), ['search', 'dog'], app, { MEMORYPOOL_DATA_DIR: path.join(work, 'no-model') }, 30_000);
      transcript('npx memorypool search dog   # models/ removed', ran, 1);
      expect(ran.code).toBe(5);
      expect(ran.stdout.trim().split('\n')).toHaveLength(1);
      expect((JSON.parse(ran.stdout) as { detail: { reason: string } }).detail.reason).toContain('reinstall memorypool');
      expect(ran.stderr).toBe('');
    } finally {
      await rename(`${model}.away`, model);
    }
  });

  it('says in one line that a model you bring needs @xenova/transformers, which it did not install', async () => {
    const brought = path.join(work, 'brought-model');
    await writeTinyBert(brought);
    const ran = await run(path.join(app, 'node_modules/.bin/memorypool'), ['--model-dir', brought, 'search', 'dog'], app, { MEMORYPOOL_DATA_DIR: path.join(work, 'brought-data') }, 30_000);
    transcript('npx memorypool --model-dir ./brought-model search dog', ran, 1);
    expect(ran.code).toBe(5);
    expect(ran.stdout.trim().split('\n')).toHaveLength(1);
    expect((JSON.parse(ran.stdout) as { detail: { reason: string } }).detail.reason).toContain('npm install @xenova/transformers@2.17.2');
    expect(ran.stderr).toBe('');
  });

  it('installs globally and serves from the global command', async () => {
    const prefix = path.join(work, 'global');
    // npm 12 takes --allow-scripts only with -g; npm 11 runs every install script anyway.
    const allow = (await npmMajor(work)) >= 12 ? ['--allow-scripts=hnswlib-node'] : [];
    const installed = await run('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', ...allow, tarball], work);
    transcript(`npm install -g ${allow.join(' ')} ./memorypool-${manifest.version}.tgz`, installed, 4);
    expectOk(installed, 'npm install -g');
    const command = path.join(prefix, 'bin/memorypool');
    expect((await run(command, ['--version'], work)).stdout.trim()).toBe(manifest.version);
    const server = await startServerProcess({ dataDir: path.join(work, 'global-data'), entry: realpathSync(command), args: ['serve'], cwd: work, env: { MEMORYPOOL_EMBEDDER: 'onnx' }, startTimeoutMs: 60_000 });
    const post = async (route: string, body: unknown) => (await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })).json();
    await post('/add', { request_id: 'g1', user_id: 'u', session_id: 's', messages: [{ role: 'Ann', content: 'My sister lives in Lisbon.', timestamp: 1683554160000 }] });
    const searched = (await post('/search', { query: 'Where does the sister live?', user_id: 'u', top_k: 1 })) as { data: Array<{ content: string }> };
    expect(searched.data[0]?.content).toContain('My sister lives in Lisbon.');
    expect((await server.stop()).code).toBe(0);
  }, 600_000);
});
