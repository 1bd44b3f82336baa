import { appendFile, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { tempDir } from '../support/helper.js';
import { KEEP_GRAPHS, request, sleep, startServerProcess, waitForIndexes } from '../support/server-process.js';

/**
 * SIGKILL the real server in the middle of 32 clients' Adds, restart it on the same data
 * directory, and check the platform contract's promise: an Add answered 200 was durable, and a
 * retry of any Add (answered or not) is a 200 that stores nothing twice.
 */

const CLIENTS = 32;
const USERS = ['crash-u0', 'crash-u1', 'crash-u2', 'crash-u3'];
const WORDS = ['garden', 'violin', 'harbor', 'pottery', 'marathon', 'lantern', 'orchid', 'glacier', 'sailing', 'quilt', 'canyon', 'espresso', 'falcon', 'meadow', 'origami', 'tundra'];
/** Storm Adds acknowledged before the kill; the cap keeps every user under the list limit. */
const ACKS_BEFORE_KILL = 120;
const MAX_ADDS_PER_CLIENT = 40;

interface PlannedAdd {
  userId: string;
  body: { request_id: string; user_id: string; session_id: string; messages: Array<{ role: string; content: string; timestamp: number }> };
  texts: string[];
}

function plannedAdd(client: number, n: number): PlannedAdd {
  const userId = USERS[client % USERS.length];
  const parts = 1 + ((client + n) % 3);
  const texts = Array.from({ length: parts }, (_, m) => {
    const words = [0, 1, 2].map((k) => WORDS[(client * 7 + n * 3 + m * 5 + k * 11) % WORDS.length]);
    return `Note ${client}-${n}-${m}: ${words.join(' ')} on day ${n}`;
  });
  return {
    userId,
    texts,
    body: {
      request_id: `crash-${client}-${n}`,
      user_id: userId,
      session_id: `session-${client}`,
      messages: texts.map((content, m) => ({ role: m % 2 === 0 ? 'Caroline' : 'Melanie', content, timestamp: 1_700_000_000_000 + n * 60_000 + m })),
    },
  };
}

async function inPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}

async function listTexts(url: string, userId: string): Promise<string[]> {
  const response = await request(`${url}/mem/list?user_id=${encodeURIComponent(userId)}&limit=1000`);
  expect(response.status).toBe(200);
  return (response.body as Array<{ text: string; user_id: string }>).map((memory) => {
    expect(memory.user_id).toBe(userId);
    return memory.text;
  });
}

function counts(texts: readonly string[]): Map<string, number> {
  const out = new Map<string, number>();
  for (const text of texts) out.set(text, (out.get(text) ?? 0) + 1);
  return out;
}

describe('crash recovery (SIGKILL under load)', () => {
  it('keeps every acknowledged Add, retries store nothing twice, and a torn last line is skipped with a warning', async () => {
    const dataDir = await tempDir('memorypool-crash-');
    const store = new JsonlStore(dataDir, silentLogger());
    const first = await startServerProcess({ dataDir, env: { ...KEEP_GRAPHS } });

    const attempted: PlannedAdd[] = [];
    const acked = new Set<PlannedAdd>();
    const send = async (add: PlannedAdd): Promise<boolean> => {
      attempted.push(add);
      try {
        const response = await request(`${first.url}/add`, { body: add.body, timeoutMs: 5_000 });
        if (response.status !== 200) return false;
        expect(response.body).toEqual({ success: true, request_id: add.body.request_id, user_id: add.userId, session_id: add.body.session_id });
        acked.add(add);
        return true;
      } catch {
        return false; // The server died under this request: its outcome is unknown.
      }
    };

    // Warm-up: one Add per client, then wait for the index caches (flushed 2 s after the last
    // write), so the restart also meets a cache that is older than the JSONL.
    for (let client = 0; client < CLIENTS; client++) await send(plannedAdd(client, 0));
    expect(acked.size).toBe(CLIENTS);
    const cacheDeadline = performance.now() + 8_000;
    const cached = async () => (await Promise.all(USERS.map((userId) => stat(store.cacheFilePath(userId, 'vectors.hnsw')).then(() => true, () => false)))).every(Boolean);
    while (!(await cached()) && performance.now() < cacheDeadline) await sleep(100);
    expect(await cached()).toBe(true);

    // The storm: 32 clients adding as fast as they can; SIGKILL once enough were acknowledged.
    const ackedBeforeStorm = acked.size;
    const stormDeadline = performance.now() + 10_000;
    let killed = false;
    const clients = Array.from({ length: CLIENTS }, async (_, client) => {
      for (let n = 1; n <= MAX_ADDS_PER_CLIENT && !killed && performance.now() < stormDeadline; n++) {
        const sent = send(plannedAdd(client, n));
        // Killed just after a request went out, so at least that Add is cut off: the server answers
        // so fast that every request in flight when an ack arrives may already be answered.
        if (!killed && acked.size - ackedBeforeStorm >= ACKS_BEFORE_KILL) {
          killed = true;
          first.child.kill('SIGKILL');
        }
        if (!(await sent)) return;
      }
    });
    await Promise.all(clients);
    if (!killed) first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const unacked = attempted.filter((add) => !acked.has(add));
    expect(unacked.length).toBeGreaterThan(0); // Some Adds really were cut off by the kill.

    // Force a torn last line, as a crash in the middle of an append would leave one.
    const tornFile = path.join(store.userDir(USERS[0]), 'memories.jsonl');
    await appendFile(tornFile, `{"id":"torn-line","user_id":"${USERS[0]}","text":"half writ`);
    const tornLine = (await readFile(tornFile, 'utf8')).split('\n').length;

    const second = await startServerProcess({ dataDir, env: { ...KEEP_GRAPHS } });
    const warning = await second.waitForLog((record) => record.file === tornFile && record.line === tornLine);
    expect(warning.level).toBe(40);
    expect(String(warning.msg)).toMatch(/torn/);
    expect(await readFile(path.join(store.userDir(USERS[0]), 'quarantine.jsonl'), 'utf8')).toContain('half writ');

    // Every acknowledged Add came back, once, and nothing torn did.
    for (const userId of USERS) {
      const stored = counts(await listTexts(second.url, userId));
      for (const add of [...acked].filter((candidate) => candidate.userId === userId)) {
        for (const text of add.texts) expect(stored.get(text), `${add.body.request_id}: ${text}`).toBe(1);
      }
      for (const [text, count] of stored) expect(count, text).toBe(1);
      expect([...stored.keys()].some((text) => text.includes('half writ'))).toBe(false);
    }

    // ...and is searchable, including the Adds the index cache had not seen.
    await waitForIndexes(second);
    const stats = (await request(`${second.url}/mem/stats`)).body as { per_user: Array<{ user_id: string; count: number; index: { vectors: number } }> };
    for (const entry of stats.per_user) expect(entry.index.vectors).toBe(entry.count);
    const newest = [...acked].slice(-12);
    for (const add of newest) {
      const text = add.texts[0];
      const response = await request(`${second.url}/search`, { body: { query: text, user_id: add.userId, top_k: 10 } });
      expect(response.status).toBe(200);
      expect((response.body.data as Array<{ content: string }>).some((hit) => hit.content.endsWith(text)), text).toBe(true);
    }

    // Retrying every Add, answered or not, twice at once: 200 each, nothing stored twice.
    await inPool(attempted, 8, async (add) => {
      const responses = await Promise.all([0, 1].map(() => request(`${second.url}/add`, { body: add.body })));
      for (const response of responses) {
        expect(response.status, response.text).toBe(200);
        expect(response.body).toMatchObject({ success: true, request_id: add.body.request_id, user_id: add.userId });
      }
    });
    for (const userId of USERS) {
      const stored = await listTexts(second.url, userId);
      const expected = attempted.filter((add) => add.userId === userId).flatMap((add) => add.texts);
      expect(stored.length).toBe(expected.length);
      expect([...counts(stored).entries()].sort()).toEqual([...counts(expected).entries()].sort());
    }

    expect(await second.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });
});
