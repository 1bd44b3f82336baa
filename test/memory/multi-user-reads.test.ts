import { describe, expect, it } from 'vitest';
import type { Memory } from '../../src/domain/memory.js';
import type { MemoryService } from '../../src/memory/memory-service.js';
import { TWO_SERVICES } from '../support/two-services.js';

async function walk(service: MemoryService, userIds: string[], limit: number, between: (page: number) => Promise<void> = async () => undefined): Promise<Memory[]> {
  const seen: Memory[] = [];
  let cursor: string | undefined;
  for (let page = 0; ; page++) {
    const answer = await service.listUsersPage(userIds, { limit, cursor });
    expect(answer.memories.length).toBeLessThanOrEqual(limit);
    seen.push(...answer.memories);
    if (answer.nextCursor === null) return seen;
    cursor = answer.nextCursor;
    await between(page);
  }
}

describe.each(TWO_SERVICES)('reads across several users (%s)', (_name, open) => {
  it('ranks each user as alone, merges by score, carries each hit\'s user and folds one text across users', async () => {
    const [a, b] = await open();
    await a.addMemory({ userId: 'alice', text: 'Alice adopted a beagle named Max' });
    await a.addMemory({ userId: 'alice', text: 'Alice works at the bakery' });
    await a.addMemory({ userId: 'team', text: 'The team dog is a beagle called Rex' });
    await a.addMemory({ userId: 'team', text: 'Standup is at nine' });
    await a.addMemory({ userId: 'bob', text: 'Standup is at nine' });
    await a.addMemory({ userId: 'bob', text: '  standup IS at nine ' });

    const hits = await b.searchUsers(['alice', 'team', 'nobody'], { query: 'beagle dog', limit: 10, collapseDuplicates: true });
    const alone = [...(await b.search({ userId: 'alice', query: 'beagle dog', limit: 10, collapseDuplicates: true })), ...(await b.search({ userId: 'team', query: 'beagle dog', limit: 10, collapseDuplicates: true }))];
    // The same scores as each user's own search, merged best first.
    expect(hits.map((hit) => [hit.memory.user_id, hit.memory.text, hit.score])).toEqual(
      alone.sort((x, y) => y.score - x.score || Date.parse(y.memory.updated_at) - Date.parse(x.memory.updated_at)).map((hit) => [hit.memory.user_id, hit.memory.text, hit.score]),
    );
    expect(new Set(hits.map((hit) => hit.memory.user_id))).toEqual(new Set(['alice', 'team']));

    const standup = await b.searchUsers(['team', 'bob'], { query: 'when is standup', limit: 5, collapseDuplicates: true });
    const folded = standup.filter((hit) => hit.memory.text.trim().toLowerCase() === 'standup is at nine');
    expect(folded).toHaveLength(1);
    expect(folded[0].duplicates).toBe(2);
    expect(await b.searchUsers(['nobody', 'nobody-else'], { query: 'x', limit: 5 })).toEqual([]);
  });

  it('lists several users newest first through a cursor: every memory that existed throughout, exactly once, while others write', async () => {
    const [a, b] = await open();
    const users = ['u1', 'u2', 'u3'];
    const throughout: string[] = [];
    for (let i = 0; i < 12; i++) throughout.push((await a.addMemory({ userId: users[i % 3], text: `memory ${i}` })).id);
    const doomed = [(await a.addMemory({ userId: 'u2', text: 'doomed one' })).id, (await a.addMemory({ userId: 'u3', text: 'doomed two' })).id];

    const all = await walk(b, users, 100);
    expect(all.map((memory) => memory.id).sort()).toEqual([...throughout, ...doomed].sort());
    const times = all.map((memory) => Date.parse(memory.updated_at));
    expect(times).toEqual([...times].sort((x, y) => y - x));

    const added: string[] = [];
    const seen = await walk(b, users, 4, async (page) => {
      added.push((await a.addMemory({ userId: users[page % 3], text: `added during the walk ${page}` })).id);
      if (page === 0) {
        await a.delete('u2', doomed[0]);
        await a.delete('u3', doomed[1]);
      }
    });
    const ids = seen.map((memory) => memory.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of throughout) expect(ids).toContain(id);
    for (const id of added) expect(ids).not.toContain(id);

    const first = await b.listUsersPage(users, { limit: 2 });
    await expect(b.listUsersPage(['u1', 'u2'], { limit: 2, cursor: first.nextCursor! })).rejects.toMatchObject({ code: 'INVALID_PARAMETER' });
    await expect(b.listPage({ userId: 'u1', limit: 2, cursor: first.nextCursor! })).rejects.toMatchObject({ code: 'INVALID_PARAMETER' });
  });
});
