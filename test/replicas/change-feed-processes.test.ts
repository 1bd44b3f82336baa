import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/helper.js';
import { startServerProcess, type ServerProcess } from '../support/server-process.js';
import { TWO_PROCESSES } from '../support/two-processes.js';

interface Page {
  events: Array<{ seq: number; type: string; user_id: string; memory_id: string | null; memory: { text: string } | null }>;
  next_cursor: string;
}

const changes = async (server: ServerProcess, query: string): Promise<Page> => {
  const answer = await fetch(`${server.url}/mem/changes?${query}`, { signal: AbortSignal.timeout(30_000) });
  expect(answer.status).toBe(200);
  return (await answer.json()) as Page;
};
const remember = async (server: ServerProcess, text: string, userId = 'u'): Promise<{ id: string }> => {
  const answer = await fetch(`${server.url}/mem`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text, user_id: userId }) });
  expect(answer.status).toBe(201);
  return (await answer.json()) as { id: string };
};

describe.each(TWO_PROCESSES)('the change feed across processes (%s)', (_name, start) => {
  it('wakes a long poll on one process with a write on the other, and numbers concurrent writes of both without a gap or a repeat', async () => {
    const [a, b] = await start();
    await remember(a, 'the first note');
    const waiting = changes(a, 'after=1&wait=25');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const written = await remember(b, 'written on the other process');
    const woken = await waiting;
    expect(woken.events.map((event) => [event.seq, event.type, event.memory_id, event.memory?.text])).toEqual([[2, 'added', written.id, 'written on the other process']]);

    // Both processes writing at once, several users.
    await Promise.all(Array.from({ length: 20 }, (_, i) => remember(i % 2 ? a : b, `concurrent note ${i}`, `user-${i % 3}`)));
    const fromA = await changes(a, 'limit=1000');
    const fromB = await changes(b, 'limit=1000');
    expect(fromB).toEqual(fromA);
    expect(fromA.events.map((event) => event.seq)).toEqual(Array.from({ length: 22 }, (_, i) => i + 1));
    expect(new Set(fromA.events.map((event) => event.memory?.text)).size).toBe(22);
  });
});

describe('a draining server and the long polls it holds', () => {
  it('answers a held long poll when told to stop, instead of cutting it off', async () => {
    const server = await startServerProcess({ dataDir: await tempDir() });
    await remember(server, 'a note');
    const waiting = changes(server, 'after=1&wait=60');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const stopped = server.stop('SIGTERM');
    expect(await waiting).toEqual({ events: [], next_cursor: '1' });
    expect((await stopped).code).toBe(0);
  });
});
