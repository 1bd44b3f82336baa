import { spawn } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import * as answers from '../../src/protocol/response-schemas.js';
import * as changeAnswers from '../../src/protocol/change-schemas.js';
import { projectRoot, startServerProcess } from '../support/server-process.js';
import { register, tempDir } from '../support/helper.js';
import { startMisbehavingServer } from './misbehaving-server.js';

/**
 * The Python client's tests (clients/python/tests) with the machine's python3, from the source
 * tree (nothing installed): against a real server, the shared behaviour table's misbehaving
 * socket, and the answer schemas as JSON Schema. Never skipped: a missing python3 fails here.
 */

const PYTHON = process.env.PYTHON ?? 'python3';

function run(command: string, args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describe('the Python client (clients/python)', () => {
  it('passes its unittest suite against a real server and the misbehaving socket', async () => {
    const [server, misbehaving, dir] = await Promise.all([startServerProcess({ dataDir: await tempDir() }), startMisbehavingServer(), tempDir()]);
    register(() => misbehaving.close());
    const schemasFile = path.join(dir, 'response-schemas.json');
    const schemas = {
      memory: answers.memorySchema,
      scoredMemory: answers.scoredMemorySchema,
      history: answers.historySchema,
      memoryVersion: answers.memoryVersionSchema,
      poolStats: answers.poolStatsSchema,
      entitiesAnswer: answers.entitiesAnswerSchema,
      health: answers.healthSchema,
      deleted: answers.deletedSchema,
      deletedUser: answers.deletedUserSchema,
      addAnswer: answers.addAnswerSchema,
      searchAnswer: answers.searchAnswerSchema,
      listPage: answers.listPageSchema,
      deletedCount: answers.deletedCountSchema,
      batchAnswer: answers.batchAnswerSchema,
      batchResult: answers.batchAnswerSchema.shape.results.element,
      changeEvent: changeAnswers.changeEventSchema,
      changesPage: changeAnswers.changesPageSchema,
    };
    await writeFile(schemasFile, JSON.stringify(Object.fromEntries(Object.entries(schemas).map(([name, schema]) => [name, z.toJSONSchema(schema)]))));
    const pythonRoot = path.join(projectRoot, 'clients/python');
    const { code, output } = await run(PYTHON, ['-m', 'unittest', 'discover', '-v', '-s', 'tests', '-t', '.'], {
      cwd: pythonRoot,
      env: {
        ...process.env,
        PYTHONPATH: path.join(pythonRoot, 'src'),
        PYTHONDONTWRITEBYTECODE: '1',
        MEMORYPOOL_TEST_URL: server.url,
        MEMORYPOOL_MISBEHAVING_URL: misbehaving.url,
        MEMORYPOOL_RESPONSE_SCHEMAS: schemasFile,
        MEMORYPOOL_URL: '',
        MEMORYPOOL_TOKEN: '',
      },
    });
    expect(code, output).toBe(0);
    // A suite that skipped itself would also exit 0.
    expect(output, output).not.toMatch(/skipped/);
  });

  it('builds a wheel with pip with nothing to fetch (no index, no wheel package), which installs with --no-index and imports', async () => {
    const [target, wheels] = await Promise.all([tempDir(), tempDir()]);
    const pythonRoot = path.join(projectRoot, 'clients/python');
    const env = { ...process.env, PIP_DISABLE_PIP_VERSION_CHECK: '1', PYTHONDONTWRITEBYTECODE: '1' };
    const built = await run(PYTHON, ['-m', 'pip', 'wheel', '--no-index', '--no-deps', '-w', wheels, pythonRoot], { cwd: wheels, env });
    expect(built.code, built.output).toBe(0);
    const wheel = (await readdir(wheels)).filter((name) => name.endsWith('.whl'));
    expect(wheel).toEqual([expect.stringMatching(/^memorypool-0\.1\.0-py3-none-any\.whl$/)]);
    const installed = await run(PYTHON, ['-m', 'pip', 'install', '--no-index', '--no-deps', '--target', target, path.join(wheels, wheel[0])], { cwd: target, env });
    expect(installed.code, installed.output).toBe(0);
    const imported = await run(PYTHON, ['-c', 'import memorypool, sys; print(memorypool.__file__); print(memorypool.MemoryPoolClient.__name__)'], { cwd: target, env: { ...env, PYTHONPATH: target } });
    expect(imported.code, imported.output).toBe(0);
    const [file, name] = imported.output.trim().split('\n');
    expect(file.startsWith(target)).toBe(true);
    expect(name).toBe('MemoryPoolClient');
  });
});
