import { describe, expect, it } from 'vitest';
import type { MemoryService } from '../../src/memory/memory-service.js';
import { openService } from '../support/helper.js';
import { TWO_SERVICES } from '../support/two-services.js';

/** Walks every page of the user's list; `between` runs after each page (writes of others). */
async function walk(service: MemoryService, userId: string, limit: number, between: (page: number) => Promise<void> = async () => undefined): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let page = 0; ; page++) {
    const answer = await service.listPage({ userId, limit, cursor });
    seen.push(...answer.memories.map((memory) => memory.id));
    if (answer.nextCursor === null) return seen;
    cursor = answer.nextCursor;
    await between(page);
  }
}

describe.each(TWO_SERVICES)('paging through a list (%s)', (_name, open) => {
  it('returns every memory that existed throughout exactly once while the other adds and deletes', async () => {
    const [walker, writer] = await open();
    const initial: string[] = [];
    for (let i = 0; i < 57; i++) initial.push((await writer.addMemory({ userId: 'u', text: `note ${i}`, agentId: i % 2 ? 'a1' : 'a2' })).id);
    const doomed = new Set(initial.filter((_, i) => i % 7 === 3));
    const doomedList = [...doomed];
    const added: string[] = [];
    const seen = await walk(walker, 'u', 5, async (page) => {
      added.push((await writer.addMemory({ userId: 'u', text: `late ${page}` })).id);
      const victim = doomedList[page];
      if (victim) await writer.delete('u', victim);
    });
    expect(new Set(seen).size).toBe(seen.length);
    const throughout = initial.filter((id) => !doomed.has(id));
    for (const id of throughout) expect(seen).toContain(id);
    for (const id of added) expect(seen).not.toContain(id);
    // Newest first, as the list is.
    const order = seen.filter((id) => throughout.includes(id));
    expect(order).toEqual([...throughout].reverse());
  });

  it('pages a filtered list, and a cursor works on the other service and refuses another filter', async () => {
    const [a, b] = await open();
    for (let i = 0; i < 12; i++) await a.addMemory({ userId: 'u', text: `fact ${i}`, agentId: i % 3 === 0 ? 'planner' : 'coder', runId: `run-${i % 2}` });
    const first = await a.listPage({ userId: 'u', limit: 2, filter: { agentId: 'planner' } });
    expect(first.memories.map((memory) => memory.text)).toEqual(['fact 9', 'fact 6']);
    const second = await b.listPage({ userId: 'u', limit: 2, filter: { agentId: 'planner' }, cursor: first.nextCursor! });
    expect(second).toEqual({ memories: expect.any(Array), nextCursor: null });
    expect(second.memories.map((memory) => memory.text)).toEqual(['fact 3', 'fact 0']);
    await expect(b.listPage({ userId: 'u', limit: 2, filter: { agentId: 'coder' }, cursor: first.nextCursor! })).rejects.toMatchObject({ code: 'INVALID_PARAMETER' });
    await expect(b.listPage({ userId: 'u', limit: 2, cursor: 'not-a-cursor' })).rejects.toMatchObject({ code: 'INVALID_PARAMETER', message: 'cursor: not a cursor this service gave' });
    // A scope nobody has matches nothing.
    expect(await b.listPage({ userId: 'u', limit: 5, filter: { agentId: 'nobody' } })).toEqual({ memories: [], nextCursor: null });
    expect((await b.search({ userId: 'u', query: 'fact', limit: 20, filter: { runId: 'run-1', agentId: 'planner' } })).map((hit) => hit.memory.text).sort()).toEqual(['fact 3', 'fact 9']);
  });

  it('keeps scopes across an update (with history) and on the other service', async () => {
    const [a, b] = await open();
    const memory = await a.addMemory({ userId: 'u', text: 'uses vim', agentId: 'coder', runId: 'r1' });
    expect(memory).toMatchObject({ agent_id: 'coder', run_id: 'r1' });
    const moved = await b.updateMemory({ userId: 'u', id: memory.id, agentId: 'reviewer', runId: null });
    expect(moved.agent_id).toBe('reviewer');
    expect(moved).not.toHaveProperty('run_id');
    expect(await a.get('u', memory.id)).toEqual(moved);
    const history = await a.history('u', memory.id);
    expect(history.versions.map((version) => [version.agent_id, version.run_id])).toEqual([['coder', 'r1'], ['reviewer', undefined]]);
    expect((await a.list({ userId: 'u', limit: 5, filter: { agentId: 'coder' } })).length).toBe(0);
    expect((await a.list({ userId: 'u', limit: 5, filter: { agentId: 'reviewer' } })).map((m) => m.id)).toEqual([memory.id]);
    // Export carries the scopes and the history's; an import brings them back.
    const exported = await a.exportRecords('u');
    expect(exported[0]).toMatchObject({ agent_id: 'reviewer', history: [{ agent_id: 'coder', run_id: 'r1' }] });
    const elsewhere = await openService();
    await elsewhere.importRecords(exported);
    expect(await elsewhere.get('u', memory.id)).toEqual(moved);
    expect(await elsewhere.history('u', memory.id)).toEqual(history);
  });
});
