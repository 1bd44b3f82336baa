import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { MemoryPoolClient } from 'memorypool-client';
import { openMemoryPool } from '../../src/index.js';
import { INVOKE_ACTIONS } from '../../src/protocol/invoke.js';
import { OPERATION_LIST } from '../../src/protocol/operations.js';
import { projectRoot } from '../support/server-process.js';
import { register, tempDir } from '../support/helper.js';

/**
 * The clients' methods are written by hand; these tests hold them to the operation table
 * (src/protocol/operations.ts): every operation has a method in the TypeScript client, the
 * Python client and the in-process pool, the HTTP ones calling its method and path, and no
 * client has a method that is no operation (besides the /invoke door and their own plumbing).
 */

/** Besides the operations: the /invoke envelope, the walks over every page (listAll) and every change (followChanges), and each client's own plumbing. */
const DOORS = ['invoke', 'listAll', 'followChanges'];

/** The value given for each path parameter, so the path a client built can be compared with the declared one. */
const PARAM = 'p-1';
const concretePath = (declared: string) => declared.replace(/:\w+/g, PARAM);
const pathParams = (declared: string) => declared.match(/:\w+/g)?.map(() => PARAM) ?? [];
const snakeCase = (name: string) => name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** The public methods a class declares, read from its source (private ones are on the prototype too at run time). */
async function declaredMethods(file: string, className: string): Promise<string[]> {
  const source = await readFile(path.join(projectRoot, file), 'utf8');
  const body = source.slice(source.indexOf(`class ${className} `));
  const end = body.search(/^}/m);
  return [...body.slice(0, end).matchAll(/^ {2}(?:async )?(\w+)\(/gm)].map((match) => match[1]).filter((name) => name !== 'constructor');
}

describe('the operation table', () => {
  it('names each client method, /invoke action and MCP tool once', () => {
    for (const key of ['client', 'path'] as const) {
      const values = OPERATION_LIST.map((operation) => (key === 'path' ? `${operation.method} ${operation.path}` : operation[key]));
      expect(new Set(values).size, key).toBe(values.length);
    }
    const tools = OPERATION_LIST.flatMap((operation) => operation.mcp?.tool ?? []);
    expect(new Set(tools).size).toBe(tools.length);
    // An MCP tool runs its operation's action: a tool without one would have nothing to run.
    expect(OPERATION_LIST.filter((operation) => operation.mcp && !operation.action)).toEqual([]);
    expect(INVOKE_ACTIONS).toEqual(['add', 'search', 'list', 'page', 'get', 'update', 'history', 'delete', 'purge', 'batch', 'stats', 'entities', 'changes', 'webhooks']);
  });
});

describe('the TypeScript client (packages/client/src/memorypool-client.ts)', () => {
  it('calls each operation at its declared method and path', async () => {
    const sent: Array<{ method: string; path: string }> = [];
    const client = new MemoryPoolClient({
      url: 'http://memorypool.invalid',
      retries: 0,
      fetch: async (url, init) => {
        sent.push({ method: init!.method!, path: new URL(String(url)).pathname });
        return new Response('{}', { status: 200 });
      },
    });
    for (const operation of OPERATION_LIST) {
      const method = (client as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>)[operation.client];
      expect(method, operation.client).toBeTypeOf('function');
      sent.length = 0;
      await method.call(client, ...pathParams(operation.path), {});
      expect(sent, operation.name).toEqual([{ method: operation.method, path: concretePath(operation.path) }]);
    }
  });

  it('has no method that is not an operation', async () => {
    const expected = [...OPERATION_LIST.map((operation) => operation.client), ...DOORS];
    expect((await declaredMethods('packages/client/src/memorypool-client.ts', 'MemoryPoolClient')).sort()).toEqual(expected.sort());
  });
});

describe('the in-process pool (src/in-process.ts)', () => {
  it('has a method for each operation and no other', async () => {
    const pool = await openMemoryPool({ dataDir: await tempDir(), embedder: 'hash' });
    register(() => pool.close());
    for (const operation of OPERATION_LIST) expect((pool as unknown as Record<string, unknown>)[operation.client], operation.client).toBeTypeOf('function');
    const expected = [...OPERATION_LIST.map((operation) => operation.client), ...DOORS, 'close'];
    expect((await declaredMethods('src/in-process.ts', 'InProcessPool')).sort()).toEqual(expected.sort());
  });
});

// Each public method called with a placeholder for every required argument, `_call` caught: the method and path it would send.
const LIST_PYTHON_CALLS = `
import inspect, json
from memorypool._client import MemoryPoolClient
calls = {}
class Recorder(MemoryPoolClient):
    def _call(self, call):
        calls[current] = {"method": call.method, "path": call.path}
client = Recorder(url="http://memorypool.invalid")
for current, method in inspect.getmembers(client, inspect.ismethod):
    if current.startswith("_"):
        continue
    required = [p for p in inspect.signature(method).parameters.values() if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    placeholder = lambda p: {} if "Mapping" in str(p.annotation) else ${JSON.stringify(PARAM)}
    positional = [placeholder(p) for p in required if p.kind == p.POSITIONAL_OR_KEYWORD]
    keywords = {p.name: placeholder(p) for p in required if p.kind == p.KEYWORD_ONLY}
    calls[current] = None
    method(*positional, **keywords)
print(json.dumps(calls))
`;

describe('the Python client (clients/python)', () => {
  it('calls each operation at its declared method and path, and has no method that is not an operation', async () => {
    const { stdout } = await promisify(execFile)(process.env.PYTHON ?? 'python3', ['-c', LIST_PYTHON_CALLS], {
      env: { ...process.env, PYTHONPATH: path.join(projectRoot, 'clients/python/src'), PYTHONDONTWRITEBYTECODE: '1' },
    });
    const calls = JSON.parse(stdout) as Record<string, { method: string; path: string } | null>;
    for (const operation of OPERATION_LIST) {
      expect(calls[snakeCase(operation.client)], operation.name).toEqual({ method: operation.method, path: concretePath(operation.path) });
    }
    // with_options makes a client rather than calling the server.
    const expected = [...OPERATION_LIST.map((operation) => snakeCase(operation.client)), ...DOORS.map(snakeCase), 'with_options'];
    expect(Object.keys(calls).sort()).toEqual(expected.sort());
  });
});
