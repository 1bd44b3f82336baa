import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { projectRoot } from '../support/server-process.js';
import { tempDir } from '../support/helper.js';
import { assertBuilt } from '../support/compiled.js';

/**
 * The package's exports as an application gets them: a fresh node process imports one by name
 * (self-reference resolves it to dist/, like an installed package) while a module hook records
 * every module loaded, so a client that pulled in the service, fastify, onnxruntime or pg fails.
 */

const HOOKS = `
import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(process.env.LOADED_MODULES, resolved.url + '\\n');
  return resolved;
}`;

async function loadedBy(specifier: string): Promise<{ exports: string[]; modules: string[] }> {
  const log = path.join(await tempDir(), 'loaded.txt');
  const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`;
  const script = `const m = await import(${JSON.stringify(specifier)}); process.stdout.write(JSON.stringify(Object.keys(m)));`;
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', `data:text/javascript,${encodeURIComponent(register)}`, '--input-type=module', '-e', script], {
    cwd: projectRoot,
    env: { ...process.env, LOADED_MODULES: log },
  });
  const modules = [...new Set((await readFile(log, 'utf8')).trim().split('\n'))].map((url) => url.replace(`file://${projectRoot}/`, ''));
  return { exports: JSON.parse(stdout) as string[], modules };
}

describe('the package exports', () => {
  beforeAll(assertBuilt);

  it('memorypool-client, and memorypool/client that re-exports it, load the client package and nothing else: no zod, service, fastify, onnxruntime or pg', async () => {
    const alone = await loadedBy('memorypool-client');
    expect(alone.exports).toEqual(expect.arrayContaining(['MemoryPoolClient', 'MemoryPoolError', 'NotFoundError', 'RateLimitError', 'APITimeoutError']));
    expect(alone.modules.filter((module) => !module.startsWith('packages/client/dist/'))).toEqual([]);
    const reexported = await loadedBy('memorypool/client');
    expect(reexported.exports.sort()).toEqual(alone.exports.sort());
    expect(reexported.modules.filter((module) => !module.startsWith('packages/client/dist/'))).toEqual(['dist/src/client/index.js']);
  });

  it('memorypool/langchain and memorypool/ai load the client and their framework, not the service', async () => {
    for (const [specifier, framework] of [['memorypool/langchain', 'node_modules/@langchain/core/'], ['memorypool/ai', 'node_modules/ai/']] as const) {
      const { modules } = await loadedBy(specifier);
      expect(modules.some((module) => module.includes(framework)), specifier).toBe(true);
      const ours = modules.filter((module) => /^(packages\/client\/)?dist\//.test(module));
      // The request schemas and the small pure modules they are built from (the `where` reader, scopes, instants, a memory's parsed times).
      expect(ours.filter((module) => !/^(packages\/client\/dist\/|dist\/src\/(integrations|protocol\/memorypool-schemas|protocol\/request-limits|protocol\/where-expression|protocol\/instant|domain\/where|domain\/scope|domain\/time-fields))/.test(module)), specifier).toEqual([]);
      for (const heavy of ['fastify', 'onnxruntime-node', 'pg/', 'hnswlib-node']) expect(modules.some((module) => module.includes(`node_modules/${heavy}`)), `${specifier} loads ${heavy}`).toBe(false);
    }
  });

  it('memorypool is the in-process pool, with the client and its errors beside it', async () => {
    const { exports } = await loadedBy('memorypool');
    expect(exports).toEqual(expect.arrayContaining(['openMemoryPool', 'MemoryPoolClient', 'MemoryPoolError', 'UnprocessableEntityError']));
  });
});
