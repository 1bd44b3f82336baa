import { expect } from 'vitest';
import { memorySchema } from '../../src/protocol/response-schemas.js';
import type { ServerProcess } from './server-process.js';

/**
 * What the upgrade tests check on a server opened on data an earlier build wrote (a data
 * directory under test/fixtures/data-dirs/, a PostgreSQL dump under test/fixtures/postgres/):
 * every memory that build answered, as it answered it and in the documented shape (no field of
 * the old line that this build does not answer), with its versions; nothing it had deleted;
 * its platform Add request ids, so a repeat of that Add stores nothing; and a search that finds.
 */

/** What the fixture's generator saved from the old build's answers (expected.json). */
export interface EarlierAnswers {
  users: Record<string, Array<{ memory: Record<string, unknown>; history: { versions: Array<Record<string, unknown>> } | null }>>;
}

/** The platform Add every generator sent: sending it again must store nothing. */
const ADD = { request_id: 'fixture-r1', user_id: 'conv-1', session_id: 's1', messages: [
  { role: 'Caroline', content: 'I went to a support group yesterday.', timestamp: 1683554160000 },
  { role: 'Melanie', content: 'That sounds brave.', timestamp: 1683554220000 },
] };

export async function expectServesEarlierAnswers(server: ServerProcess, expected: EarlierAnswers): Promise<void> {
  const get = async (route: string) => {
    const response = await fetch(`${server.url}${route}`);
    expect(response.status, route).toBe(200);
    return response.json();
  };

  for (const [user, memories] of Object.entries(expected.users)) {
    expect(memories.length, user).toBeGreaterThan(0);
    const listed = (await get(`/mem/list?user_id=${user}&limit=100`)) as Array<{ id: string }>;
    expect(listed.map((memory) => memory.id).sort(), user).toEqual(memories.map(({ memory }) => memory.id).sort());
    for (const { memory, history } of memories) {
      const now = (await get(`/mem/${memory.id}?user_id=${user}`)) as Record<string, unknown>;
      expect(now).toMatchObject(memory);
      expect(memorySchema.safeParse(now).error?.issues, `${user}: ${memory.id as string}`).toBeUndefined();
      const versions = ((await get(`/mem/${memory.id}/history?user_id=${user}`)) as { versions: Array<Record<string, unknown>> }).versions;
      // A build without history served none: its memory is this build's version 1.
      if (history) expect(versions).toEqual(history.versions);
      else expect(versions).toEqual([expect.objectContaining({ version: 1, text: memory.text })]);
    }
  }
  const caroline = (await get('/mem/list?user_id=caroline&limit=100')) as Array<{ text: string }>;
  expect(caroline.map((memory) => memory.text)).not.toContain('A memory deleted before the upgrade');

  const before = ((await get('/mem/list?user_id=conv-1&limit=100')) as unknown[]).length;
  const again = await fetch(`${server.url}/add`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ADD) });
  expect(await again.json()).toEqual({ success: true, request_id: 'fixture-r1', user_id: 'conv-1', session_id: 's1' });
  expect(((await get('/mem/list?user_id=conv-1&limit=100')) as unknown[]).length).toBe(before);

  const found = (await get('/mem/search?q=rescue+dog&user_id=caroline&limit=1')) as Array<{ text: string }>;
  expect(found[0]?.text).toMatch(/^Caroline adopted a rescue (dog|beagle) named Max$/);
}
