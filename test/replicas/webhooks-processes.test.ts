import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/helper.js';
import { request } from '../support/server-process.js';
import { TWO_PROCESSES } from '../support/two-processes.js';
import { startReceiver, verifiedByPython } from '../support/webhook-receiver.js';

const SECRET = 'whsec_two_processes';
const SEQUENTIAL = 10;
const CONCURRENT = 10;

describe.each(TWO_PROCESSES)('webhooks across processes (%s)', (_name, start) => {
  it('delivers each event once, by one of them, in seq order, whichever process wrote it; both show the same state', async () => {
    const receiver = await startReceiver();
    const hooksFile = path.join(await tempDir(), 'hooks.json');
    await writeFile(hooksFile, JSON.stringify([{ id: 'mirror', url: receiver.url, secret: SECRET }]));
    const [a, b] = await start({ MEMORYPOOL_WEBHOOKS_FILE: hooksFile, MEMORYPOOL_WEBHOOKS_RETRY_MS: '20' });

    for (let index = 0; index < SEQUENTIAL; index++) {
      const added = await request(`${(index % 2 ? a : b).url}/mem`, { body: { user_id: 'alice', text: `alice fact ${index}` } });
      expect(added.status).toBe(201);
    }
    // Both processes writing at once.
    const written = await Promise.all(
      Array.from({ length: CONCURRENT }, (_, index) => request(`${(index % 2 ? a : b).url}/mem`, { body: { user_id: `user-${index % 3}`, text: `concurrent fact ${index}` } })),
    );
    expect(written.map((answer) => answer.status)).toEqual(Array(CONCURRENT).fill(201));

    const total = SEQUENTIAL + CONCURRENT;
    await receiver.waitFor(() => receiver.accepted().length === total, 30_000);
    // Neither process sent what the other had: every delivery is a distinct event, in order.
    const seqs = receiver.received.map((entry) => entry.event.seq);
    expect(seqs).toEqual(Array.from({ length: total }, (_, index) => index + 1));
    expect(new Set(receiver.received.map((entry) => entry.event.id)).size).toBe(total);
    expect(new Set(receiver.received.map((entry) => entry.event.memory?.text)).size).toBe(total);
    expect(verifiedByPython(SECRET, receiver.received).every(Boolean)).toBe(true);

    for (const server of [a, b]) {
      await expect.poll(async () => (await request(`${server.url}/mem/webhooks`)).body.webhooks[0].delivered_seq).toBe(total);
    }
    const [stateA, stateB] = await Promise.all([a, b].map(async (server) => (await request(`${server.url}/mem/webhooks`)).body.webhooks[0]));
    expect(stateA).toMatchObject({ id: 'mirror', failures: 0, failed: false, holder: expect.any(String) });
    expect(stateB.holder).toBe(stateA.holder);
    // A little later, still nothing more: no second delivery from the process that did not hold the lease.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(receiver.received).toHaveLength(total);
  });
});
