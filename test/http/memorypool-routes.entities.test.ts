import { describe, expect, it } from 'vitest';
import { build, tempDir } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';

const STORES: Array<[string, () => Promise<{ dataDir?: string; databaseUrl?: string }>]> = [
  ['JSONL', async () => ({ dataDir: await tempDir() })],
  ['PostgreSQL', async () => ({ databaseUrl: await freshDatabase() })],
];

/** GET /mem/entities and the `entity` filter, through app.inject, on both stores. */
describe.each(STORES)('entities over HTTP (%s)', (_name, store) => {
  it('lists the entities and filters search, list and delete by one, any case, on every door', async () => {
    const { app } = await build({ service: await store() });
    const add = await app.inject({
      method: 'POST',
      url: '/add',
      payload: {
        request_id: 'r1',
        user_id: 'conv-1',
        session_id: 's1',
        messages: [
          { role: 'Caroline', content: 'I read "Becoming Nicole" at the library in Boston.', timestamp: 1683554160000 },
          { role: 'Melanie', content: 'Nice! I took the kids to Boston last week.', timestamp: 1683557760000 },
        ],
      },
    });
    expect(add.statusCode).toBe(200);
    await app.inject({ method: 'POST', url: '/mem', payload: { text: 'Melanie runs a pottery class on Fridays', user_id: 'conv-1' } });

    const listed = await app.inject({ url: '/mem/entities?user_id=conv-1' });
    expect(listed.statusCode).toBe(200);
    const entities = listed.json().entities;
    // The most mentioned first, then the most recently; a weekday ("on Fridays") is no entity.
    expect(entities.slice(0, 2)).toEqual([
      { entity: 'Melanie', kind: 'person', count: 2, last_seen: expect.any(String) },
      { entity: 'Boston', kind: 'name', count: 2, last_seen: '2023-05-08T14:56:00.000Z' },
    ]);
    expect(entities.slice(2).sort((a: { entity: string }, b: { entity: string }) => a.entity.localeCompare(b.entity))).toEqual([
      { entity: 'Becoming Nicole', kind: 'title', count: 1, last_seen: '2023-05-08T13:56:00.000Z' },
      { entity: 'Caroline', kind: 'person', count: 1, last_seen: '2023-05-08T13:56:00.000Z' },
      { entity: 'Nicole', kind: 'name', count: 1, last_seen: '2023-05-08T13:56:00.000Z' },
    ]);
    expect((await app.inject({ url: '/mem/entities?user_id=conv-1&limit=1' })).json().entities).toEqual(entities.slice(0, 1));
    // The same answer from /invoke.
    const invoked = await app.inject({ method: 'POST', url: '/invoke', payload: { params: { action: 'entities', user_id: 'conv-1' } } });
    expect(invoked.json()).toEqual(listed.json());

    const texts = (body: Array<{ text: string }>) => body.map((memory) => memory.text).sort();
    expect(texts((await app.inject({ url: '/mem/list?user_id=conv-1&entity=BOSTON' })).json())).toEqual([
      'I read "Becoming Nicole" at the library in Boston.',
      'Nice! I took the kids to Boston last week.',
    ]);
    expect(texts((await app.inject({ url: '/mem/search?user_id=conv-1&q=class&entity=melanie' })).json())).toEqual([
      'Melanie runs a pottery class on Fridays',
      'Nice! I took the kids to Boston last week.',
    ]);
    const found = await app.inject({ method: 'POST', url: '/mem/search', payload: { query: 'book', user_id: 'conv-1', entity: 'becoming nicole' } });
    expect(texts(found.json())).toEqual(['I read "Becoming Nicole" at the library in Boston.']);
    const page = await app.inject({ method: 'POST', url: '/mem/list', payload: { user_id: 'conv-1', entity: 'Caroline' } });
    expect(page.json().memories).toHaveLength(1);
    expect((await app.inject({ url: '/mem/list?user_id=conv-1&entity=nobody' })).json()).toEqual([]);

    const blank = await app.inject({ url: '/mem/list?user_id=conv-1&entity=%20' });
    expect([blank.statusCode, blank.json().error]).toEqual([400, 'entity: entity must not be empty']);
    const long = await app.inject({ url: `/mem/search?q=x&entity=${'a'.repeat(201)}` });
    expect([long.statusCode, long.json().error]).toEqual([400, 'entity: entity must be at most 200 characters']);

    const purge = await app.inject({ method: 'POST', url: '/mem/delete', payload: { user_id: 'conv-1', where: { importance: { $gte: 0 } }, entity: 'boston' } });
    expect(purge.json()).toEqual({ deleted: 2, dry_run: false });
    expect((await app.inject({ url: '/mem/entities?user_id=conv-1' })).json().entities).toEqual([
      { entity: 'Melanie', kind: 'name', count: 1, last_seen: expect.any(String) },
    ]);
    expect((await app.inject({ url: '/mem/entities?user_id=nobody' })).json()).toEqual({ entities: [] });
  });
});
