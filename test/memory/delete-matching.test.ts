import { describe, expect, it } from 'vitest';
import { parseWhere } from '../../src/protocol/where-expression.js';
import { TWO_SERVICES } from '../support/two-services.js';

const where = (expression: unknown) => {
  const parsed = parseWhere(expression);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.node;
};

describe.each(TWO_SERVICES)('deleting by filter (%s)', (_name, open) => {
  it('counts first with a dry run, then deletes every match with its history, seen at once by the other service', async () => {
    const [a, b] = await open();
    const styx = [];
    for (let i = 0; i < 5; i++) styx.push(await a.addMemory({ userId: 'u', text: `styx fact ${i}`, metadata: { project: 'styx' }, agentId: i < 3 ? 'ops' : 'dev' }));
    const other = await a.addMemory({ userId: 'u', text: 'lethe fact', metadata: { project: 'lethe' }, agentId: 'ops' });
    await a.updateMemory({ userId: 'u', id: styx[0].id, text: 'styx fact 0, corrected' });
    const filter = { where: where({ 'metadata.project': 'styx' }), agentId: 'ops' };
    expect(await b.deleteMatching('u', filter, true)).toBe(3);
    expect((await a.list({ userId: 'u', limit: 10 })).length).toBe(6);
    expect(await b.deleteMatching('u', filter)).toBe(3);
    expect((await a.list({ userId: 'u', limit: 10 })).map((memory) => memory.text).sort()).toEqual(['lethe fact', 'styx fact 3', 'styx fact 4']);
    expect(await a.store.history('u', styx[0].id)).toEqual([]);
    expect(await a.deleteMatching('u', filter)).toBe(0);
    expect(await a.deleteMatching('nobody', filter)).toBe(0);
    expect((await b.get('u', other.id)).id).toBe(other.id);
  });
});
