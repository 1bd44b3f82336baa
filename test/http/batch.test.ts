import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MemoryPoolClient } from 'memorypool-client';
import { build, register } from '../support/helper.js';

const TEAM_TOKEN = 'team-a-token-8c3e5f0a1d97';
const teamGrant = { digest: createHash('sha256').update(TEAM_TOKEN).digest(), userPrefixes: ['team-a/'] };

/** POST /mem/batch on the HTTP door, /invoke and the TypeScript client. */
describe('POST /mem/batch', () => {
  it('answers each operation in order with its own status; an invalid one refuses only itself', async () => {
    const { app } = await build();
    const existing = (await app.inject({ method: 'POST', url: '/mem', payload: { text: 'lives in Paris', user_id: 'alice' } })).json();
    const response = await app.inject({
      method: 'POST',
      url: '/mem/batch',
      payload: {
        user_id: 'alice',
        operations: [
          { op: 'add', text: 'Prefers tea to coffee', tags: ['drinks'], agent_id: 'barista' },
          { op: 'update', id: existing.id, text: 'lives in Berlin', expires_at: null },
          { op: 'add', text: '' },
          { op: 'rename', id: existing.id },
          { op: 'add', text: 'x', user_id: 'bob' },
          { op: 'update', id: existing.id },
          { op: 'delete', id: 'no-such-id' },
          'add',
        ],
      },
    });
    expect(response.statusCode).toBe(200);
    const { results } = response.json();
    expect(results.map((result: { status: number }) => result.status)).toEqual([201, 200, 400, 400, 400, 400, 404, 400]);
    expect(results[0].memory).toMatchObject({ text: 'Prefers tea to coffee', agent_id: 'barista', user_id: 'alice', version: 1 });
    expect(results[1].memory).toMatchObject({ id: existing.id, text: 'lives in Berlin', version: 2 });
    expect(results.slice(2).map((result: { error: string }) => result.error)).toEqual([
      'operations[2].text: text must not be empty',
      'operations[3].op: must be "add", "update" or "delete"',
      'operations[4].user_id: name the user once, on the batch',
      'operations[5]: give at least one of text, tags, importance, metadata, agent_id, run_id, expires_at, ttl_seconds',
      'No memory with id "no-such-id"',
      'operations[7]: must be an object',
    ]);
    const listed = (await app.inject({ url: '/mem/list?user_id=alice' })).json();
    expect(listed.map((memory: { text: string }) => memory.text)).toEqual(['lives in Berlin', 'Prefers tea to coffee']);

    const deleted = await app.inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'batch', user_id: 'alice', operations: [{ op: 'delete', id: existing.id }] } } });
    expect(deleted.json()).toEqual({ results: [{ status: 200, deleted: existing.id }] });
    for (const [payload, error] of [
      [{ operations: [] }, 'operations: operations must hold at least one operation'],
      [{ operations: Array.from({ length: 1001 }, () => ({ op: 'delete', id: 'x' })) }, 'operations: operations may hold at most 1000 operations'],
      [{}, 'operations: is required'],
    ] as const) {
      const refused = await app.inject({ method: 'POST', url: '/mem/batch', payload });
      expect([refused.statusCode, refused.json().error]).toEqual([400, error]);
    }
  });

  it('takes 1,000 operations; a scoped token must cover the batch user; the client sends it', async () => {
    const { app } = await build({ grants: [teamGrant] });
    const auth = { authorization: `Bearer ${TEAM_TOKEN}` };
    const operations = Array.from({ length: 1000 }, (_, i) => ({ op: 'add', text: `fact number ${i}` }));
    const response = await app.inject({ method: 'POST', url: '/mem/batch', headers: auth, payload: { user_id: 'team-a/ann', operations } });
    expect(response.json().results.filter((result: { status: number }) => result.status === 201)).toHaveLength(1000);
    const forbidden = await app.inject({ method: 'POST', url: '/mem/batch', headers: auth, payload: { user_id: 'team-b/bob', operations: operations.slice(0, 1) } });
    expect(forbidden.statusCode).toBe(403);

    const address = await app.listen({ port: 0, host: '127.0.0.1' });
    register(() => app.close());
    const client = new MemoryPoolClient({ url: address, token: TEAM_TOKEN, retries: 0 });
    const answer = await client.batch({ user_id: 'team-a/ann', operations: [{ op: 'add', text: 'one more', metadata: { n: 1 } }, { op: 'delete', id: 'gone' }] });
    expect(answer.results.map((result) => result.status)).toEqual([201, 404]);
    expect((await client.stats({ user_id: 'team-a/ann' })).count).toBe(1001);
  });
});
