import { describe, expect, it } from 'vitest';
import { AuthenticationError, MemoryPoolClient } from 'memorypool-client';
import { startServerProcess } from '../support/server-process.js';
import { tempDir } from '../support/helper.js';
import { exerciseClient, failure } from '../support/exercise-client.js';

describe('MemoryPoolClient against a real server', () => {
  it('runs every method', async () => {
    const server = await startServerProcess({ dataDir: await tempDir() });
    await exerciseClient(new MemoryPoolClient({ url: server.url, token: '' }));
  });

  it('sends the token, and a wrong one is an AuthenticationError', async () => {
    const server = await startServerProcess({ dataDir: await tempDir(), env: { MEMORYPOOL_TOKEN: 'right' } });
    expect(await new MemoryPoolClient({ url: server.url, token: 'right' }).list()).toEqual([]);
    const error = await failure(new MemoryPoolClient({ url: server.url, token: 'wrong', retries: 0 }).list());
    expect(error).toBeInstanceOf(AuthenticationError);
    expect(error.status).toBe(401);
  });
});
