import { describe, expect, it } from 'vitest';
import type { MemoryService } from '../../src/memory/memory-service.js';
import type { DeliveryTiming } from '../../src/webhooks/hook-delivery.js';
import { parseWebhooks, type WebhookSpec } from '../../src/webhooks/webhooks-file.js';
import { openService, tempDir } from '../support/helper.js';
import { TWO_SERVICES } from '../support/two-services.js';
import { startReceiver, verifiedByPython } from '../support/webhook-receiver.js';

/** The documented schedule shrunk to test size: retries in tens of ms, a receiver's silence cut at 400 ms. */
const FAST: Partial<DeliveryTiming> = { retryBaseMs: 20, retryMaxMs: 200, pollMs: 20, timeoutMs: 400 };
const SECRET = 'whsec_test_secret';

function hooks(url: string, extra: Record<string, unknown> = {}): WebhookSpec[] {
  return parseWebhooks([{ url, secret: SECRET, ...extra }], 'test');
}

async function writeSome(service: MemoryService, userId: string, count: number): Promise<void> {
  for (let index = 0; index < count; index++) await service.addMemory({ userId, text: `${userId} fact number ${index}` });
}

describe('webhook delivery', () => {
  it('retries a receiver that fails and times out, in seq order, until it recovers: each event once after dedupe, every signature verified independently', async () => {
    // Attempts 1-2 answer 500, attempt 3 hangs past the timeout, attempt 5 answers 503; the rest 200.
    const receiver = await startReceiver((attempt) => (attempt < 2 ? 500 : attempt === 2 ? 'hang' : attempt === 4 ? 503 : 200));
    const service = await openService({ webhooks: hooks(receiver.url), webhookTiming: FAST });
    service.startWebhooks();
    await writeSome(service, 'alice', 3);
    const memory = await service.addMemory({ userId: 'bob', text: 'bob likes tea' });
    await service.updateMemory({ userId: 'bob', id: memory.id, text: 'bob likes green tea' });
    await service.delete('bob', memory.id);

    await receiver.waitFor(() => receiver.accepted().length === 6);
    const accepted = receiver.accepted();
    expect(accepted.map((entry) => entry.event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(accepted.map((entry) => entry.event.type)).toEqual(['added', 'added', 'added', 'added', 'updated', 'deleted']);
    // The event as the feed answers it: the memory joined as of that version, null once deleted.
    expect(accepted[0].event.memory?.text).toBe('alice fact number 0');
    expect(accepted[5].event.memory).toBeNull();
    const hookId = (await service.webhooks())[0].id;
    expect(accepted.map((entry) => entry.event.id)).toEqual([1, 2, 3, 4, 5, 6].map((seq) => `${hookId}:${seq}`));
    // Each failed attempt was retried before any later event went: three at seq 1, one at seq 2.
    expect(receiver.received.slice(0, 6).map((entry) => [entry.event.seq, entry.answer])).toEqual([[1, 500], [1, 500], [1, 'hang'], [1, 200], [2, 503], [2, 200]]);
    expect(verifiedByPython(SECRET, receiver.received)).toEqual(receiver.received.map(() => true));
    expect(verifiedByPython('another secret', receiver.received.slice(0, 1))).toEqual([false]);

    // The cursor is saved just after the receiver's answer.
    await expect.poll(async () => (await service.webhooks())[0].delivered_seq).toBe(6);
    const [status] = await service.webhooks();
    expect(status).toMatchObject({ delivered_seq: 6, failures: 0, failed: false, url: receiver.url, events: null, users: null });
    expect(JSON.stringify(status)).not.toContain(SECRET);
  });

  it('shows a failing hook as failing (failures, last error, next try) while every later event waits', async () => {
    const receiver = await startReceiver(() => 500);
    const service = await openService({ webhooks: hooks(receiver.url), webhookTiming: { ...FAST, retryBaseMs: 60_000, retryMaxMs: 60_000 } });
    service.startWebhooks();
    await writeSome(service, 'alice', 2);
    await receiver.waitFor((received) => received.length === 1);
    await expect.poll(async () => (await service.webhooks())[0].failures).toBe(1);
    const [status] = await service.webhooks();
    expect(status.delivered_seq).toBe(0);
    expect(status.last_error).toBe('the receiver answered 500');
    expect(Date.parse(status.next_try_at!)).toBeGreaterThan(Date.now() + 20_000);
    expect(status.holder).toMatch(/:\d+:[0-9a-f]{8}$/);
    expect(receiver.received.map((entry) => entry.event.seq)).toEqual([1]);
  });

  it('gives a hook up after the retry window of failures, keeping its cursor, and takes it up again when a service starts', async () => {
    let answer = 500;
    const receiver = await startReceiver(() => answer);
    const dataDir = await tempDir();
    const first = await openService({ dataDir, webhooks: hooks(receiver.url), webhookTiming: { ...FAST, retryWindowMs: 300 } });
    first.startWebhooks();
    await writeSome(first, 'alice', 2);
    await expect.poll(async () => (await first.webhooks())[0].failed, { timeout: 10_000 }).toBe(true);
    const [given] = await first.webhooks();
    expect(given).toMatchObject({ delivered_seq: 0, failed: true, next_try_at: null, last_error: 'the receiver answered 500' });
    const attempts = receiver.received.length;
    await new Promise((resolve) => setTimeout(resolve, 300));
    // No attempt while given up; none got past the first event.
    expect(receiver.received.length).toBe(attempts);
    expect(new Set(receiver.received.map((entry) => entry.event.seq))).toEqual(new Set([1]));
    await first.close();

    answer = 200;
    const second = await openService({ dataDir, webhooks: hooks(receiver.url), webhookTiming: FAST });
    second.startWebhooks();
    await receiver.waitFor(() => receiver.accepted().length === 2);
    expect(receiver.accepted().map((entry) => entry.event.seq)).toEqual([1, 2]);
    await expect.poll(async () => (await second.webhooks())[0]).toMatchObject({ delivered_seq: 2, failed: false, failures: 0 });
  });

  it("sends a hook only the events and users it asks for, and moves its cursor past the others", async () => {
    const receiver = await startReceiver();
    const service = await openService({ webhooks: hooks(receiver.url, { events: ['deleted'], users: ['bob', 'carol'] }), webhookTiming: FAST });
    service.startWebhooks();
    const kept = await service.addMemory({ userId: 'alice', text: 'alice kept' });
    const bobs = await service.addMemory({ userId: 'bob', text: 'bob goes' });
    await service.delete('alice', kept.id);
    await service.delete('bob', bobs.id);
    await writeSome(service, 'carol', 1);
    await receiver.waitFor(() => receiver.accepted().length === 1);
    await expect.poll(async () => (await service.webhooks())[0].delivered_seq).toBe(5);
    expect(receiver.received.map((entry) => [entry.event.type, entry.event.user_id, entry.event.seq])).toEqual([['deleted', 'bob', 4]]);
  });

  it('resumes from the stored cursor when the service opens again: nothing delivered twice, nothing skipped', async () => {
    const receiver = await startReceiver();
    const dataDir = await tempDir();
    const first = await openService({ dataDir, webhooks: hooks(receiver.url), webhookTiming: FAST });
    first.startWebhooks();
    await writeSome(first, 'alice', 3);
    await receiver.waitFor(() => receiver.accepted().length === 3);
    await first.close();
    // Written while no deliverer runs.
    const writer = await openService({ dataDir });
    await writeSome(writer, 'alice', 2);
    await writer.close();
    const second = await openService({ dataDir, webhooks: hooks(receiver.url), webhookTiming: FAST });
    second.startWebhooks();
    await receiver.waitFor(() => receiver.accepted().length === 5);
    expect(receiver.received.map((entry) => entry.event.seq)).toEqual([1, 2, 3, 4, 5]);
  });
});

describe.each(TWO_SERVICES)('webhooks with %s', (_name, openTwo) => {
  it('are delivered by one of them: each event once, in order, whichever service wrote it', async () => {
    const receiver = await startReceiver();
    const [a, b] = await openTwo({ webhooks: hooks(receiver.url), webhookTiming: FAST });
    a.startWebhooks();
    b.startWebhooks();
    for (let index = 0; index < 6; index++) await (index % 2 === 0 ? a : b).addMemory({ userId: `user-${index % 3}`, text: `fact ${index}` });
    await receiver.waitFor(() => receiver.accepted().length === 6);
    // A moment for a second deliverer, were there one, to send its copies.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.received.map((entry) => entry.event.seq)).toEqual([1, 2, 3, 4, 5, 6]);
    const [fromA, fromB] = [await a.webhooks(), await b.webhooks()];
    expect(fromA).toEqual(fromB);
    expect(fromA[0].holder).not.toBeNull();
  });

  it('keeps the lease through a page of answers slower than the lease: no takeover, so nothing sent twice', async () => {
    // The first attempt fails, so the retry finds all eight events in one page: ~640 ms of answers against a 240 ms lease.
    const receiver = await startReceiver((attempt) => (attempt === 0 ? 503 : 200), { delayMs: 80 });
    const [a, b] = await openTwo({ webhooks: hooks(receiver.url), webhookTiming: { ...FAST, leaseMs: 240, retryBaseMs: 400, retryMaxMs: 400 } });
    a.startWebhooks();
    b.startWebhooks();
    await a.addMemory({ userId: 'alice', text: 'fact 0' });
    await receiver.waitFor((received) => received.length === 1);
    for (let index = 1; index < 8; index++) await a.addMemory({ userId: 'alice', text: `fact ${index}` });
    await receiver.waitFor(() => receiver.accepted().length === 8);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.received.map((entry) => entry.event.seq)).toEqual([1, 1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('passes the hook to the other when its holder stops', async () => {
    const receiver = await startReceiver();
    const [a, b] = await openTwo({ webhooks: hooks(receiver.url), webhookTiming: FAST });
    a.startWebhooks();
    await a.addMemory({ userId: 'alice', text: 'first' });
    await receiver.waitFor(() => receiver.accepted().length === 1);
    b.startWebhooks();
    await a.close();
    await b.addMemory({ userId: 'alice', text: 'second' });
    await receiver.waitFor(() => receiver.accepted().length === 2);
    expect(receiver.received.map((entry) => entry.event.seq)).toEqual([1, 2]);
  });
});
