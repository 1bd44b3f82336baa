import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { build } from '../support/helper.js';

const grant = (token: string, userPrefixes: string[] | null) => ({ digest: createHash('sha256').update(token).digest(), userPrefixes });
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe('GET /mem/changes and /invoke changes', () => {
  it('answers pages of events; a scoped token sees only its users, an unscoped one every user or one', async () => {
    const { app } = await build({ grants: [grant('admin-token', null), grant('team-a-token', ['team-a/'])] });
    for (const [user, text] of [['team-a/ann', 'ann likes tea'], ['team-b/bo', 'bo likes coffee'], ['team-a/cy', 'cy likes water']]) {
      const added = await app.inject({ method: 'POST', url: '/mem', headers: bearer('admin-token'), payload: { user_id: user, text } });
      expect(added.statusCode).toBe(201);
    }
    const all = await app.inject({ method: 'GET', url: '/mem/changes', headers: bearer('admin-token') });
    expect(all.statusCode).toBe(200);
    expect(all.json().events.map((event: { seq: number; user_id: string; memory: { text: string } }) => [event.seq, event.user_id, event.memory.text])).toEqual([
      [1, 'team-a/ann', 'ann likes tea'],
      [2, 'team-b/bo', 'bo likes coffee'],
      [3, 'team-a/cy', 'cy likes water'],
    ]);
    expect(all.json().next_cursor).toBe('3');
    const oneUser = await app.inject({ method: 'GET', url: '/mem/changes?user_id=team-b/bo', headers: bearer('admin-token') });
    expect(oneUser.json().events.map((event: { seq: number }) => event.seq)).toEqual([2]);

    const scoped = await app.inject({ method: 'GET', url: '/mem/changes?after=0&limit=10', headers: bearer('team-a-token') });
    expect(scoped.json()).toMatchObject({ next_cursor: '3' });
    expect(scoped.json().events.map((event: { user_id: string }) => event.user_id)).toEqual(['team-a/ann', 'team-a/cy']);
    expect((await app.inject({ method: 'GET', url: '/mem/changes?user_id=team-b/bo', headers: bearer('team-a-token') })).statusCode).toBe(403);

    const invoked = await app.inject({ method: 'POST', url: '/invoke', headers: bearer('team-a-token'), payload: { params: { action: 'changes', after: 1, limit: 1 } } });
    expect(invoked.statusCode).toBe(200);
    expect(invoked.json()).toMatchObject({ events: [{ seq: 3, user_id: 'team-a/cy' }], next_cursor: '3' });
  });

  it('refuses bad parameters with 400 and an expired cursor with 410 naming the oldest one held', async () => {
    const { app, service } = await build();
    for (const query of ['after=-1', 'after=abc', 'limit=0', 'wait=61', 'wait=1.5', 'user_id=']) {
      const answer = await app.inject({ method: 'GET', url: `/mem/changes?${query}` });
      expect(answer.statusCode, query).toBe(400);
      expect(answer.json().detail.reason, query).toMatch(/after|limit|wait|user_id/);
    }
    for (const text of ['one', 'two', 'three']) await app.inject({ method: 'POST', url: '/mem', payload: { text } });
    expect(await service.pruneChanges(-1)).toBe(2);
    const expired = await app.inject({ method: 'GET', url: '/mem/changes?after=1' });
    expect(expired.statusCode).toBe(410);
    expect(expired.json()).toEqual({ detail: { reason: expect.stringContaining('retention') }, error: expect.any(String), oldest_cursor: '2' });
    expect((await app.inject({ method: 'GET', url: '/mem/changes?after=2' })).json().events.map((event: { seq: number }) => event.seq)).toEqual([3]);
  });

  it('holds a request with wait until a write arrives', async () => {
    const { app } = await build({ service: { changesPollMs: 20 } });
    const started = performance.now();
    const waiting = app.inject({ method: 'GET', url: '/mem/changes?after=0&wait=20' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await app.inject({ method: 'POST', url: '/mem', payload: { text: 'the awaited note' } });
    const answer = await waiting;
    expect(answer.json().events.map((event: { memory: { text: string } }) => event.memory.text)).toEqual(['the awaited note']);
    expect(performance.now() - started).toBeLessThan(20_000);
  });
});
