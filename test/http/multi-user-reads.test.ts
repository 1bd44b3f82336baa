import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryPoolClient } from 'memorypool-client';
import { build, register } from '../support/helper.js';

const TEAM_TOKEN = 'team-a-token-8c3e5f0a1d97';
const teamGrant = { digest: createHash('sha256').update(TEAM_TOKEN).digest(), userPrefixes: ['team-a/'] };

/** Search and list naming several users, on every HTTP form, /invoke and the TypeScript client. */
describe('reads across several users over HTTP', () => {
  it('takes user_id repeated (GET) and user_ids (POST), each hit carrying its user; pages the merged list', async () => {
    const { app } = await build({ grants: [teamGrant] });
    const auth = { authorization: `Bearer ${TEAM_TOKEN}` };
    for (const [user, text] of [['team-a/ann', 'Ann keeps bees'], ['team-a/shared', 'The team hive is on the roof'], ['team-a/ann', 'Ann likes honey'], ['team-a/bo', 'Bo fixes bikes']]) {
      await app.inject({ method: 'POST', url: '/mem', headers: auth, payload: { text, user_id: user } });
    }
    const got = await app.inject({ url: '/mem/search?q=bees%20hive&user_id=team-a/ann&user_id=team-a/shared', headers: auth });
    expect(got.statusCode).toBe(200);
    expect(new Set(got.json().map((hit: { user_id: string }) => hit.user_id))).toEqual(new Set(['team-a/ann', 'team-a/shared']));
    const posted = await app.inject({ method: 'POST', url: '/mem/search', headers: auth, payload: { query: 'bees hive', user_ids: ['team-a/ann', 'team-a/shared'] } });
    expect(posted.json()).toEqual(got.json());
    const invoked = await app.inject({ method: 'POST', url: '/invoke', headers: auth, payload: { params: { action: 'search', query: 'bees hive', user_ids: ['team-a/ann', 'team-a/shared'] } } });
    expect(invoked.json()).toEqual(got.json());

    // The merged list, newest first, a page at a time through Link.
    const walked: string[] = [];
    let url: string | null = '/mem/list?limit=2&user_id=team-a/ann&user_id=team-a/shared&user_id=team-a/bo';
    while (url) {
      const response = await app.inject({ url, headers: auth });
      walked.push(...response.json().map((memory: { text: string }) => memory.text));
      const link = response.headers.link as string | undefined;
      url = link ? link.slice(1, link.indexOf('>')) : null;
    }
    expect(walked).toEqual(['Bo fixes bikes', 'Ann likes honey', 'The team hive is on the roof', 'Ann keeps bees']);
    const page = (await app.inject({ method: 'POST', url: '/mem/list', headers: auth, payload: { user_ids: ['team-a/ann', 'team-a/bo'], limit: 2 } })).json();
    expect(page.memories.map((memory: { user_id: string }) => memory.user_id)).toEqual(['team-a/bo', 'team-a/ann']);
    const rest = (await app.inject({ method: 'POST', url: '/mem/list', headers: auth, payload: { user_ids: ['team-a/ann', 'team-a/bo'], limit: 2, cursor: page.next_cursor } })).json();
    expect(rest).toMatchObject({ memories: [{ text: 'Ann keeps bees' }], next_cursor: null });

    // A scoped token must cover every user named: the 403 names the first it does not.
    const refused = await app.inject({ url: '/mem/search?q=x&user_id=team-a/ann&user_id=team-b/bob&user_id=team-c/cy', headers: auth });
    expect([refused.statusCode, refused.json().error]).toEqual([403, 'These credentials do not cover user "team-b/bob"']);
    const tooMany = await app.inject({ method: 'POST', url: '/mem/list', headers: auth, payload: { user_ids: Array.from({ length: 17 }, (_, i) => `team-a/u${i}`) } });
    expect([tooMany.statusCode, tooMany.json().error]).toEqual([400, 'user_ids: at most 16 users at once']);
    const blank = await app.inject({ method: 'POST', url: '/mem/search', headers: auth, payload: { query: 'x', user_ids: ['team-a/ann', ' '] } });
    expect([blank.statusCode, blank.json().error]).toEqual([400, 'user_ids: user_id must not be empty']);

    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    register(() => app.close());
    const client = new MemoryPoolClient({ url: address, token: TEAM_TOKEN, retries: 0 });
    expect(await client.recall({ query: 'bees hive', user_ids: ['team-a/ann', 'team-a/shared'] })).toEqual(got.json());
    expect((await client.list({ user_id: ['team-a/ann', 'team-a/bo'] })).map((memory) => memory.text)).toEqual(['Bo fixes bikes', 'Ann likes honey', 'Ann keeps bees']);
    const all: string[] = [];
    for await (const memory of client.listAll({ user_ids: ['team-a/ann', 'team-a/shared', 'team-a/bo'], limit: 1 })) all.push(memory.text);
    expect(all).toEqual(walked);
  });
});
