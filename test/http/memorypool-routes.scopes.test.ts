import { describe, expect, it } from 'vitest';
import { MemoryPoolClient } from 'memorypool-client';
import { build, register } from '../support/helper.js';

/** Issue 27 on the HTTP door: scopes, `where` on the POST forms, pages through the cursor. */
describe('scopes, where and pages over HTTP', () => {
  it('sets scopes on POST /mem, filters on them in GET forms, moves them by PATCH', async () => {
    const { app } = await build();
    const add = (payload: object) => app.inject({ method: 'POST', url: '/mem', payload }).then((response) => response.json());
    const a = await add({ text: 'prefers dark mode', agent_id: 'ui-bot', run_id: 'run-1', user_id: 'alice' });
    const b = await add({ text: 'prefers dark chocolate', agent_id: 'chef', user_id: 'alice' });
    expect(a).toMatchObject({ agent_id: 'ui-bot', run_id: 'run-1' });
    expect(b).not.toHaveProperty('run_id');
    const listed = await app.inject({ url: '/mem/list?user_id=alice&agent_id=ui-bot' });
    expect(listed.json().map((m: { id: string }) => m.id)).toEqual([a.id]);
    expect((await app.inject({ url: '/mem/search?q=dark&user_id=alice&run_id=run-1' })).json().map((m: { id: string }) => m.id)).toEqual([a.id]);
    expect((await app.inject({ url: '/mem/search?q=dark&user_id=alice&agent_id=nobody' })).json()).toEqual([]);
    const long = await app.inject({ method: 'POST', url: '/mem', payload: { text: 'x', agent_id: 'a'.repeat(257) } });
    expect([long.statusCode, long.json().error]).toEqual([400, 'agent_id: agent_id must be at most 256 characters']);
    const both = await app.inject({ method: 'POST', url: '/mem', payload: { text: 'x', ttl_seconds: 60, expires_at: '2030-01-01T00:00:00Z' } });
    expect([both.statusCode, both.json().error]).toEqual([400, 'ttl_seconds: give expires_at or ttl_seconds, not both']);
    const expiring = (await app.inject({ method: 'POST', url: '/mem', payload: { text: 'x', expires_at: 1893456000000 } })).json();
    expect(expiring.expires_at).toBe('2030-01-01T00:00:00.000Z');
    expect((await app.inject({ method: 'PATCH', url: `/mem/${expiring.id}`, payload: { expires_at: null } })).json()).not.toHaveProperty('expires_at');
    const patched = await app.inject({ method: 'PATCH', url: `/mem/${a.id}?user_id=alice`, payload: { run_id: null, agent_id: 'ux-bot' } });
    expect(patched.json()).toMatchObject({ agent_id: 'ux-bot', version: 2 });
    expect(patched.json()).not.toHaveProperty('run_id');
    const history = (await app.inject({ url: `/mem/${a.id}/history?user_id=alice` })).json();
    expect(history.versions.map((v: { agent_id?: string; run_id?: string }) => [v.agent_id, v.run_id ?? null])).toEqual([['ui-bot', 'run-1'], ['ux-bot', null]]);
  });

  it('takes where on POST /mem/search and /mem/list, and answers an invalid one with a 400 naming the place', async () => {
    const { app } = await build();
    for (const [text, importance, project] of [['deploy key rotated', 0.9, 'styx'], ['deploy notes', 0.2, 'lethe'], ['deploy window', 0.5, 'styx']] as const) {
      await app.inject({ method: 'POST', url: '/mem', payload: { text, importance, metadata: { project }, tags: ['ops'] } });
    }
    const where = { $and: [{ 'metadata.project': 'styx' }, { $not: { importance: { $gte: 0.8 } } }] };
    const found = await app.inject({ method: 'POST', url: '/mem/search', payload: { query: 'deploy', where, tag: 'ops' } });
    expect(found.statusCode).toBe(200);
    expect(found.json().map((m: { text: string }) => m.text)).toEqual(['deploy window']);
    const page = (await app.inject({ method: 'POST', url: '/mem/list', payload: { where: { importance: { $in: [0.2, 0.9] } } } })).json();
    expect(page.memories.map((m: { text: string }) => m.text)).toEqual(['deploy notes', 'deploy key rotated']);
    expect(page.next_cursor).toBeNull();
    for (const [bad, error] of [
      [{ $or: [{ importance: 0.5 }, { importance: 'high' }] }, 'where.$or[1].importance: must be a number'],
      [{ colour: 'red' }, 'where.colour: unknown field; expected one of agent_id, run_id, source, tags, importance, created_at, updated_at, occurred_at, expires_at, metadata.<key>'],
      [{ created_at: { $after: '2026-01-01' } }, 'where.created_at.$after: unknown operator; expected one of $eq, $ne, $gt, $gte, $lt, $lte, $exists'],
    ] as const) {
      for (const url of ['/mem/search', '/mem/list']) {
        const response = await app.inject({ method: 'POST', url, payload: { query: 'deploy', where: bad } });
        expect([response.statusCode, response.json().error]).toEqual([400, error]);
      }
      const invoked = await app.inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'search', query: 'deploy', where: bad } } });
      expect([invoked.statusCode, invoked.json().error]).toEqual([400, error]);
    }
    expect((await app.inject({ method: 'POST', url: '/mem/list', payload: [] })).json().error).toBe('body: must be a JSON object');

    // Delete by filter: the count first, then the deletion; `where` must say something.
    const forget = (payload: object) => app.inject({ method: 'POST', url: '/mem/delete', payload });
    expect((await forget({ where: { 'metadata.project': 'styx' }, dry_run: true })).json()).toEqual({ deleted: 2, dry_run: true });
    expect((await forget({ where: { 'metadata.project': 'styx' } })).json()).toEqual({ deleted: 2, dry_run: false });
    expect((await app.inject({ url: '/mem/list' })).json().map((m: { text: string }) => m.text)).toEqual(['deploy notes']);
    for (const [payload, error] of [[{}, 'where: is required'], [{ where: {} }, 'where: must hold at least one condition'], [{ where: { $and: [{}] } }, 'where: must hold at least one condition'], [{ where: { colour: 1 } }, 'where.colour: unknown field; expected one of agent_id, run_id, source, tags, importance, created_at, updated_at, occurred_at, expires_at, metadata.<key>']] as const) {
      const refused = await forget(payload);
      expect([refused.statusCode, refused.json().error]).toEqual([400, error]);
    }
  });

  it('names the next page in Link and x-next-cursor, and walks the same with POST /mem/list, /invoke and the client', async () => {
    const { app } = await build();
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.unshift((await app.inject({ method: 'POST', url: '/mem', payload: { text: `item ${i}`, tags: ['t'] } })).json().id);
    const walked: string[] = [];
    let url: string | null = '/mem/list?limit=3&tag=t';
    while (url) {
      const response = await app.inject({ url });
      walked.push(...response.json().map((m: { id: string }) => m.id));
      const link = response.headers.link as string | undefined;
      if (link) {
        expect(link).toMatch(/^<\/mem\/list\?limit=3&tag=t&cursor=[\w-]+>; rel="next"$/);
        expect(link).toContain(`cursor=${response.headers['x-next-cursor']}`);
      } else expect(response.headers).not.toHaveProperty('x-next-cursor');
      url = link ? link.slice(1, link.indexOf('>')) : null;
    }
    expect(walked).toEqual(ids);

    const first = (await app.inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'page', limit: 4 } } })).json();
    expect(first.memories).toHaveLength(4);
    const second = (await app.inject({ method: 'POST', url: '/mem/list', payload: { limit: 4, cursor: first.next_cursor } })).json();
    expect([...first.memories, ...second.memories].map((m: { id: string }) => m.id)).toEqual(ids);
    expect(second.next_cursor).toBeNull();
    const stale = await app.inject({ url: `/mem/list?limit=4&tag=other&cursor=${first.next_cursor}` });
    expect([stale.statusCode, stale.json().error]).toEqual([400, 'cursor: made for another user or filter; send the same filters as the page it came with']);

    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    register(() => app.close());
    const client = new MemoryPoolClient({ url: address, retries: 0 });
    const all: string[] = [];
    for await (const memory of client.listAll({ limit: 2, tag: 't' })) all.push(memory.id);
    expect(all).toEqual(ids);
    expect((await client.find({ query: 'item', where: { tags: { $contains: 't' } }, limit: 1 }))).toHaveLength(1);
  });
});
