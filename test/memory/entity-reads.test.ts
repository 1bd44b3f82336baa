import { describe, expect, it } from 'vitest';
import { TWO_SERVICES } from '../support/two-services.js';

const MAY_8 = Date.UTC(2023, 4, 8, 13, 56);
const HOUR = 3_600_000;

describe.each(TWO_SERVICES)('entities and the entity filter (%s)', (_name, open) => {
  it('lists who and what the memories mention, kept through adds, updates and deletes, seen by the other service', async () => {
    const [a, b] = await open();
    await a.addConversation({
      requestId: 'r1',
      userId: 'conv',
      sessionId: 's1',
      messages: [
        { role: 'Caroline', content: 'I went to the LGBTQ support group with Melanie yesterday.', timestamp: MAY_8 },
        { role: 'Melanie', content: 'Wow, Caroline! I painted a sunrise by the lake in Sweden.', timestamp: MAY_8 + HOUR },
        { role: 'Caroline', content: 'Melanie, that painting is lovely.', timestamp: MAY_8 + 2 * HOUR },
      ],
    });
    const fact = await a.addMemory({ userId: 'conv', text: 'Oscar is the name of Melanie\'s guinea pig' });
    const entities = await b.entities('conv', 100);
    const byName = Object.fromEntries(entities.map((entry) => [entry.entity, entry]));
    expect(byName.Melanie).toMatchObject({ kind: 'person', count: 4 });
    expect(byName.Caroline).toMatchObject({ kind: 'person', count: 3, last_seen: new Date(MAY_8 + 2 * HOUR).toISOString() });
    expect(byName.Sweden).toMatchObject({ kind: 'name', count: 1, last_seen: new Date(MAY_8 + HOUR).toISOString() });
    // A sentence-start name no memory writes in lowercase is one ("Oscar is…").
    expect(byName.Oscar).toMatchObject({ kind: 'name', count: 1 });
    expect(entities[0].entity).toBe('Melanie');
    expect(await b.entities('conv', 2)).toEqual(entities.slice(0, 2));

    // The filter, any case, on list, search and delete.
    expect((await b.list({ userId: 'conv', limit: 10, filter: { entity: 'sweden' } })).map((memory) => memory.text)).toEqual(['Wow, Caroline! I painted a sunrise by the lake in Sweden.']);
    const hits = await b.search({ userId: 'conv', query: 'what pet', limit: 10, filter: { entity: "OSCAR'S" } });
    expect(hits.map((hit) => hit.memory.id)).toEqual([fact.id]);
    expect(await b.list({ userId: 'conv', limit: 10, filter: { entity: 'Nobody' } })).toEqual([]);

    // An update that drops the name drops the memory from the entity; a delete does too.
    await a.updateMemory({ userId: 'conv', id: fact.id, text: 'The guinea pig is called Oscar' });
    expect((await b.entities('conv', 100)).find((entry) => entry.entity === 'Melanie')?.count).toBe(3);
    expect(await b.deleteMatching('conv', { entity: 'oscar' }, true)).toBe(1);
    expect(await b.deleteMatching('conv', { entity: 'oscar' })).toBe(1);
    expect((await a.entities('conv', 100)).map((entry) => entry.entity)).not.toContain('Oscar');
    expect(await a.entities('nobody', 100)).toEqual([]);
  });
});
