import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { BadRequestError, MemoryPoolClient, NotFoundError, type MemoryPoolApi } from 'memorypool-client';
import { openMemoryPool } from '../../src/index.js';
import { memoryTools } from '../../src/integrations/ai-sdk.js';
import { projectRoot, startServerProcess } from '../support/server-process.js';
import { register, tempDir } from '../support/helper.js';
import { failure } from '../support/exercise-client.js';

/**
 * The clients' `update`, `history`, metadata and time filters, on the routes that serve them
 * (PATCH /mem/{id}, GET /mem/{id}/history, `meta.<key>`, `since`, `until`, /invoke `update`).
 */

async function exerciseUpdates(pool: MemoryPoolApi): Promise<void> {
  const before = new Date(Date.now() - 1000).toISOString();
  const dog = await pool.remember({ text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], metadata: { topic: 'pets' }, user_id: 'caroline' });
  await pool.remember({ text: 'Caroline works as a counsellor', metadata: { topic: 'work' }, user_id: 'caroline' });
  expect(dog.metadata).toEqual({ topic: 'pets' });

  const updated = await pool.update(dog.id, { text: 'Caroline adopted a rescue beagle named Max', importance: 0.9, user_id: 'caroline' });
  expect(updated).toMatchObject({ id: dog.id, text: 'Caroline adopted a rescue beagle named Max', importance: 0.9, tags: ['pets'], version: 2 });
  expect(typeof updated.updated_at).toBe('string');
  expect(await pool.get(dog.id, { user_id: 'caroline' })).toMatchObject({ text: 'Caroline adopted a rescue beagle named Max' });

  const history = await pool.history(dog.id, { user_id: 'caroline' });
  expect(history.id).toBe(dog.id);
  expect(history.versions[0]).toMatchObject({ version: 1, text: 'Caroline adopted a rescue dog named Max', tags: ['pets'] });
  const versions = history.versions.map((version) => version.version);
  expect(versions).toEqual([...versions].sort((a, b) => a - b));

  expect(await failure(pool.update('no-such-id', { text: 'x', user_id: 'caroline' }))).toBeInstanceOf(NotFoundError);
  expect(await failure(pool.update(dog.id, { user_id: 'caroline' }))).toBeInstanceOf(BadRequestError);

  expect((await pool.recall({ query: 'Caroline', filter: { topic: 'pets' }, user_id: 'caroline' })).map((hit) => hit.id)).toEqual([dog.id]);
  expect((await pool.list({ filter: { topic: 'work' }, user_id: 'caroline' })).map((memory) => memory.text)).toEqual(['Caroline works as a counsellor']);
  expect(await pool.list({ since: before, user_id: 'caroline' })).toHaveLength(2);
  expect(await pool.list({ until: before, user_id: 'caroline' })).toEqual([]);

  // The AI SDK's update tool is the client's update, for the bound user.
  const tools = memoryTools({ client: pool, userId: 'caroline' });
  const corrected = await tools.update.execute!({ id: dog.id, tags: ['pets', 'dogs'] }, { toolCallId: 'u', messages: [] });
  expect(corrected).toMatchObject({ id: dog.id, tags: ['pets', 'dogs'], version: 3 });
}

describe('update, history and filters', () => {
  it('through the HTTP client against a real server', async () => {
    const server = await startServerProcess({ dataDir: await tempDir() });
    await exerciseUpdates(new MemoryPoolClient({ url: server.url, token: '' }));
  });

  it('in-process', async () => {
    const pool = await openMemoryPool({ dataDir: await tempDir(), embedder: 'hash' });
    register(() => pool.close());
    await exerciseUpdates(pool);
  });

  it('through the Python client against a real server', async () => {
    const server = await startServerProcess({ dataDir: await tempDir() });
    const pythonRoot = path.join(projectRoot, 'clients/python');
    const child = spawn(process.env.PYTHON ?? 'python3', ['-m', 'unittest', '-v', 'tests.issue16_update_history'], {
      cwd: pythonRoot,
      env: { ...process.env, PYTHONPATH: path.join(pythonRoot, 'src'), PYTHONDONTWRITEBYTECODE: '1', MEMORYPOOL_TEST_URL: server.url },
    });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const code = await new Promise<number | null>((resolve, reject) => child.on('error', reject).on('close', resolve));
    expect(code, output).toBe(0);
    expect(output, output).not.toMatch(/skipped/);
  });
});
