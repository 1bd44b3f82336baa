import { execFile } from 'node:child_process';
import { existsSync, readFileSync, realpathSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectRoot, startServerProcess } from '../support/server-process.js';
import { expectSnippetOutput, SCRIPTED_MODEL, snippet } from '../support/snippets.js';
import { writeTinyBert } from '../support/tiny-bert.js';

/**
 * memorypool as a user gets it: `npm pack` here (which runs `prepare`: the build and the model)
 * and of the client package it depends on (packages/client, `memorypool-client`), both tarballs
 * installed into a new application folder with the npm and Node on PATH (as the registry would
 * serve the two), and then
 * everything run from that folder, never from the repository: `memorypool serve` with the packaged
 * encoder, an Add and a Search, the client, openMemoryPool, LangChain and AI SDK snippets of the
 * docs, and the one-line refusals when the native index or the model is missing; then the same
 * tarballs installed globally; and the client package alone in an application of its own. Packages come from the npm cache the repository's own install
 * filled (`--prefer-offline`: the registry is asked only for package metadata not in the cache);
 * no install script may download anything.
 *
 * Slow (a pack and two installs, each compiling hnswlib-node): it is not part of `npm test` but
 * its own run, `npx vitest run --config vitest.package.config.ts`, on both legs of `.ci/run`.
 */

const manifest = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { version: string; devDependencies: Record<string, string> };
const clientManifest = JSON.parse(readFileSync(path.join(projectRoot, 'packages/client/package.json'), 'utf8')) as { name: string; version: string };

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

interface Packed {
  files: string[];
  packedBytes: number;
  unpackedBytes: number;
}

/** What a tarball holds (paths without the `package/` prefix) and its sizes, read from the tarball itself. */
async function tarballFacts(tarball: string): Promise<Packed> {
  const listing = (await run('tar', ['-tvzf', tarball], path.dirname(tarball))).stdout.trim().split('\n');
  const entries = listing.map((line) => /^\S+\s+\S+\s+(\d+)\s+\S+\s+\S+\s+package\/(.+)$/.exec(line)).filter((match) => match !== null);
  return { files: entries.map((match) => match[2]), packedBytes: statSync(tarball).size, unpackedBytes: entries.reduce((sum, match) => sum + Number(match[1]), 0) };
}

function report(name: string, packed: Packed): void {
  console.log(`${name}: ${packed.files.length} files, ${(packed.packedBytes / 1000).toFixed(1)} kB packed, ${(packed.unpackedBytes / 1000).toFixed(1)} kB unpacked`);
}

let work: string;
let tarball: string;
let clientTarball: string;
let app: string;
let files: string[];

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), 'memorypool-package-'));
  console.log(`node ${process.version}, npm ${(await run('npm', ['--version'], work)).stdout.trim()}`);
  const packed = await run('npm', ['pack', '--pack-destination', work, '--no-audit', '--no-fund'], projectRoot);
  transcript('npm pack', packed);
  expectOk(packed, 'npm pack');
  tarball = path.join(work, `memorypool-${manifest.version}.tgz`);
  const packedServer = await tarballFacts(tarball);
  files = packedServer.files;
  report('memorypool', packedServer);
  const packedClient = await run('npm', ['pack', '--workspace', clientManifest.name, '--pack-destination', work, '--no-audit', '--no-fund'], projectRoot);
  transcript(`npm pack --workspace ${clientManifest.name}`, packedClient);
  expectOk(packedClient, 'npm pack of the client package');
  clientTarball = path.join(work, `${clientManifest.name}-${clientManifest.version}.tgz`);

  app = path.join(work, 'app');
  await mkdir(app);
  // On npm 12 the one step beyond the install the README gives: allow hnswlib-node's build.
  await writeFile(path.join(app, 'package.json'), JSON.stringify({ name: 'fresh-app', private: true, type: 'module', allowScripts: { 'hnswlib-node': true } }, null, 2));
  const peers = ['@langchain/core', 'ai'].map((name) => `${name}@${manifest.devDependencies[name]}`);
  const installed = await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', clientTarball, tarball, ...peers], app);
  transcript(`npm install ./${path.basename(clientTarball)} ./memorypool-${manifest.version}.tgz ${peers.join(' ')}`, installed, 8);
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
    const installed = await run('npm', ['install', '-g', '--prefix', prefix, '--prefer-offline', '--no-audit', '--no-fund', ...allow, clientTarball, tarball], work);
    transcript(`npm install -g ${allow.join(' ')} ./${path.basename(clientTarball)} ./memorypool-${manifest.version}.tgz`, installed, 4);
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

describe('the client package alone in a fresh application', () => {
  /** A TypeScript module of the application: the client's types must stand alone (no zod, no server, no Node types). */
  const TYPED = `import { MemoryPoolClient, NotFoundError, type Memory, type ScoredMemory } from '${clientManifest.name}';
const memory = new MemoryPoolClient({ retries: 0 });
const stored: Memory = await memory.remember({ text: 'typed', tags: ['t'], metadata: { project: 'styx' } });
const hits: ScoredMemory[] = await memory.recall({ query: 'typed', limit: 1 });
const version: number = stored.version;
export const seen = [hits.length, version, NotFoundError.name];
// @ts-expect-error a memory's text is a string
export const wrong: number = stored.text;
`;

  it('holds its compiled modules, their types, README and LICENSE, installs alone with no dependency, and runs the docs snippet against a live server', async () => {
    const packed = await tarballFacts(clientTarball);
    report(clientManifest.name, packed);
    expect(packed.files.filter((file) => !/^dist\/[\w-]+\.(js|d\.ts)$/.test(file)).sort()).toEqual(['LICENSE', 'README.md', 'package.json']);
    for (const file of ['dist/index.js', 'dist/index.d.ts', 'dist/types.d.ts', 'dist/memorypool-client.js']) expect(packed.files, file).toContain(file);

    const clientApp = path.join(work, 'client-app');
    await mkdir(clientApp);
    await writeFile(path.join(clientApp, 'package.json'), JSON.stringify({ name: 'client-app', private: true, type: 'module' }, null, 2));
    const installed = await run('npm', ['install', '--offline', '--no-audit', '--no-fund', clientTarball], clientApp);
    transcript(`npm install --offline ./${path.basename(clientTarball)}`, installed, 2);
    expectOk(installed, 'npm install of the client package');
    expect((await readdir(path.join(clientApp, 'node_modules'))).filter((entry) => entry !== '.package-lock.json')).toEqual([clientManifest.name]);
    const lock = JSON.parse(readFileSync(path.join(clientApp, 'package-lock.json'), 'utf8')) as { packages: Record<string, unknown> };
    expect(Object.keys(lock.packages).sort()).toEqual(['', `node_modules/${clientManifest.name}`]);

    await writeFile(path.join(clientApp, 'typed.ts'), TYPED);
    const compilerOptions = { noEmit: true, strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom', 'dom.iterable'], types: [] };
    await writeFile(path.join(clientApp, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['typed.ts'] }));
    const checked = await run(process.execPath, [path.join(projectRoot, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.json'], clientApp);
    transcript('tsc -p tsconfig.json   # typed.ts imports memorypool-client, strict, no Node types', checked, 2);
    expectOk(checked, 'tsc against the installed client types');

    // A live server from the other application's install (the fast test embedder: the model is beside the point here).
    const server = await startServerProcess({ dataDir: path.join(work, 'client-served'), entry: realpathSync(path.join(app, 'node_modules/.bin/memorypool')), args: ['serve'], cwd: app, startTimeoutMs: 60_000 });
    await writeFile(path.join(clientApp, 'client-ts.js'), await snippet('client-ts'));
    const ran = await run(process.execPath, ['client-ts.js'], clientApp, { MEMORYPOOL_URL: server.url }, 60_000);
    transcript('node client-ts.js   # memorypool-client alone', ran, 2);
    expectOk(ran, 'client-ts in the client-only application');
    expectSnippetOutput('client-ts', ran.stdout.trim().split('\n'));
    expect((await server.stop()).code).toBe(0);
  }, 180_000);
});
