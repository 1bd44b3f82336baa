import { describe, expect, it } from 'vitest';
import { openMemoryPool } from '../src/index.js';
import { register, tempDir } from './support/helper.js';
import { exerciseClient, failure } from './support/exercise-client.js';

describe('openMemoryPool: the service in this process', () => {
  it('runs every method as the HTTP client does', async () => {
    const pool = await openMemoryPool({ dataDir: await tempDir(), embedder: 'hash' });
    register(() => pool.close());
    await exerciseClient(pool);
  });

  it('keeps what it wrote after close, and refuses calls once closed', async () => {
    const dataDir = await tempDir();
    const first = await openMemoryPool({ dataDir, embedder: 'hash' });
    const memory = await first.remember({ text: 'The spare key is under the third flower pot' });
    await first.close();
    expect(await failure(first.list())).toMatchObject({ status: 503 });
    const second = await openMemoryPool({ dataDir, embedder: 'hash' });
    register(() => second.close());
    expect(await second.get(memory.id)).toEqual(memory);
  });
});
