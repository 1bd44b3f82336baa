import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseWebhooks } from '../../src/webhooks/webhooks-file.js';
import { build } from '../support/helper.js';
import { startReceiver } from '../support/webhook-receiver.js';

const grant = (token: string, userPrefixes: string[] | null) => ({ digest: createHash('sha256').update(token).digest(), userPrefixes });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('GET /mem/webhooks and /invoke webhooks', () => {
  it("shows each hook's progress without its secret, to an unscoped token only", async () => {
    const receiver = await startReceiver();
    const webhooks = parseWebhooks(
      [
        { id: 'mirror', url: receiver.url.replace('http://', 'http://user:pw-in-url@'), secret: 'the-first-secret' },
        { url: 'http://127.0.0.1:9/never', secret: 'the-second-secret', events: ['deleted'], users: ['nobody'] },
      ],
      'test',
    );
    const { app, service } = await build({ grants: [grant('admin-token', null), grant('team-a-token', ['team-a/'])], service: { webhooks, webhookTiming: { pollMs: 20 } } });
    service.startWebhooks();
    const added = await app.inject({ method: 'POST', url: '/mem', headers: bearer('admin-token'), payload: { user_id: 'team-a/ann', text: 'ann likes tea' } });
    expect(added.statusCode).toBe(201);
    await receiver.waitFor(() => receiver.accepted().length === 1);
    // Credentials in the URL go as basic authentication (fetch refuses them in the URL).
    expect(receiver.received[0].authorization).toBe(`Basic ${Buffer.from('user:pw-in-url').toString('base64')}`);

    await expect.poll(async () => (await app.inject({ method: 'GET', url: '/mem/webhooks', headers: bearer('admin-token') })).json().webhooks[0].delivered_seq).toBe(1);
    const answer = await app.inject({ method: 'GET', url: '/mem/webhooks', headers: bearer('admin-token') });
    expect(answer.statusCode).toBe(200);
    const [mirror, other] = answer.json().webhooks;
    expect(mirror).toMatchObject({ id: 'mirror', url: receiver.url, events: null, users: null, delivered_seq: 1, failures: 0, last_error: null, next_try_at: null, failed: false });
    expect(mirror.holder).toEqual(expect.any(String));
    expect(other).toMatchObject({ id: expect.stringMatching(/^h-[0-9a-f]{16}$/), url: 'http://127.0.0.1:9/never', events: ['deleted'], users: ['nobody'], delivered_seq: 1 });
    expect(answer.body).not.toMatch(/the-first-secret|the-second-secret|pw-in-url/);

    const invoked = await app.inject({ method: 'POST', url: '/invoke', headers: bearer('admin-token'), payload: { params: { action: 'webhooks' } } });
    expect(invoked.statusCode).toBe(200);
    expect(JSON.stringify(invoked.json())).toContain('"id":"mirror"');

    const scoped = await app.inject({ method: 'GET', url: '/mem/webhooks', headers: bearer('team-a-token') });
    expect(scoped.statusCode).toBe(403);
    expect(scoped.body).toContain('scoped to some users');
    expect((await app.inject({ method: 'POST', url: '/invoke', headers: bearer('team-a-token'), payload: { params: { action: 'webhooks' } } })).statusCode).toBe(403);
  });

  it('answers an empty list when no hook is configured', async () => {
    const { app } = await build();
    const answer = await app.inject({ method: 'GET', url: '/mem/webhooks' });
    expect(answer.statusCode).toBe(200);
    expect(answer.json()).toEqual({ webhooks: [] });
  });
});
