import { describe, expect, it } from 'vitest';
import { MemoryPoolClient } from '../../src/client/index.js';
import { openMemoryPool } from '../../src/in-process.js';
import { register, tempDir } from '../support/helper.js';
import { startServerProcess } from '../support/server-process.js';

describe('followChanges', () => {
  it('the HTTP client and the in-process pool walk the feed from a cursor, long-polling for the next event, until aborted', async () => {
    const dataDir = await tempDir();
    const server = await startServerProcess({ dataDir });
    const client = new MemoryPoolClient({ url: server.url });
    const first = await client.remember({ text: 'the first note', user_id: 'u' });
    await client.update(first.id, { text: 'the first note, corrected', user_id: 'u' });

    const controller = new AbortController();
    const events = client.followChanges({ after: 0, wait: 5 }, { signal: controller.signal })[Symbol.asyncIterator]();
    expect((await events.next()).value).toMatchObject({ seq: 1, type: 'added', memory: { text: 'the first note', version: 1 } });
    expect((await events.next()).value).toMatchObject({ seq: 2, type: 'updated', memory: { text: 'the first note, corrected', version: 2 } });
    // Nothing more yet: the next call waits for a write.
    const third = events.next();
    setTimeout(() => void client.forget(first.id, { user_id: 'u' }), 300);
    expect((await third).value).toMatchObject({ seq: 3, type: 'deleted', memory_id: first.id, memory: null });
    controller.abort();
    expect((await client.changes({ after: 1 })).events.map((event) => event.seq)).toEqual([2, 3]);

    // The in-process pool on the same data directory, resuming from seq 2.
    await server.stop();
    const pool = await openMemoryPool({ dataDir, embedder: 'hash' });
    register(() => pool.close());
    const seen: number[] = [];
    const stop = new AbortController();
    for await (const event of pool.followChanges({ after: 2, wait: 1 }, { signal: stop.signal })) {
      seen.push(event.seq);
      stop.abort();
    }
    expect(seen).toEqual([3]);
  });
});
