import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/helper.js';
import { request, startServerProcess } from '../support/server-process.js';
import { startReceiver, verifiedByPython } from '../support/webhook-receiver.js';

const SECRET = 'whsec_crash_secret';
const EVENTS = 12;

describe('webhook delivery across a SIGKILL', () => {
  it('resumes in the next process from the last acknowledged event: nothing skipped, at most the one in flight sent again', async () => {
    // A slow receiver, so the kill lands while events are still waiting to go.
    const receiver = await startReceiver(() => 200, { delayMs: 60 });
    const dataDir = await tempDir();
    const hooksFile = path.join(await tempDir(), 'hooks.json');
    await writeFile(hooksFile, JSON.stringify([{ id: 'mirror', url: receiver.url, secret: SECRET }]));
    const env = { MEMORYPOOL_WEBHOOKS_FILE: hooksFile, MEMORYPOOL_WEBHOOKS_RETRY_MS: '20' };

    const first = await startServerProcess({ dataDir, env });
    for (let index = 0; index < EVENTS; index++) {
      const added = await request(`${first.url}/mem`, { body: { user_id: 'alice', text: `alice fact ${index}` } });
      expect(added.status).toBe(201);
    }
    await receiver.waitFor(() => receiver.accepted().length >= 3);
    await first.stop('SIGKILL');
    const beforeKill = receiver.accepted().length;
    expect(beforeKill).toBeLessThan(EVENTS);

    // The same host: the dead holder's lease is taken over at once, not at its expiry.
    const second = await startServerProcess({ dataDir, env });
    await receiver.waitFor(() => receiver.accepted().length === EVENTS);
    const seqs = receiver.accepted().map((entry) => entry.event.seq);
    expect(seqs).toEqual(Array.from({ length: EVENTS }, (_, index) => index + 1));
    // In seq order throughout; a repeat only of an event whose answer the killed process never saved.
    const raw = receiver.received.map((entry) => entry.event.seq);
    expect(raw).toEqual([...raw].sort((x, y) => x - y));
    expect(raw.length - EVENTS).toBeLessThanOrEqual(1);
    expect(verifiedByPython(SECRET, receiver.received).every(Boolean)).toBe(true);

    // The cursor is saved just after the last answer.
    await expect.poll(async () => (await request(`${second.url}/mem/webhooks`)).body.webhooks[0].delivered_seq).toBe(EVENTS);
    expect((await request(`${second.url}/mem/webhooks`)).body.webhooks[0]).toMatchObject({ id: 'mirror', failures: 0, failed: false, holder: expect.any(String) });
    await second.stop();
  });
});
