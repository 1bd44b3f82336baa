import { expect } from 'vitest';
import { request, startServerProcess, type ServerProcess } from './server-process.js';
import { tempDir } from './helper.js';
import { assertBuilt, COMPILED_MAIN } from './compiled.js';

/**
 * Replicas as users run them: `node dist/src/main.js` processes on loopback ports, each with a
 * data directory of its own and all on one PostgreSQL database, with the fast `hash` embedder.
 * Each is killed after the test (the durability helper registers that).
 */

export async function startReplicas(count: number, databaseUrl: string, env: Record<string, string> = {}): Promise<ServerProcess[]> {
  await assertBuilt();
  return Promise.all(
    Array.from({ length: count }, async () =>
      startServerProcess({
        dataDir: await tempDir('memorypool-replica-'),
        entry: COMPILED_MAIN,
        env: { MEMORYPOOL_DATABASE_URL: databaseUrl, ...env },
        startTimeoutMs: 30_000,
      }),
    ),
  );
}

export interface Reply {
  status: number;
  body: any;
  text: string;
  retryAfter: string | null;
  /** When the request was sent and when its answer (or failure) came back (Date.now()). */
  sentAt: number;
  answeredAt: number;
}

/** One JSON request, timed; a refused or reset connection rejects. */
export async function send(url: string, options: { method?: string; body?: unknown; timeoutMs?: number } = {}): Promise<Reply> {
  const sentAt = Date.now();
  const result = await request(url, options);
  return { status: result.status, body: result.body, text: result.text, retryAfter: result.headers.get('retry-after'), sentAt, answeredAt: Date.now() };
}

export interface AddBody {
  request_id: string;
  user_id: string;
  session_id: string;
  messages: Array<{ role: string; content: string; timestamp: number }>;
}

export function addBody(userId: string, requestId: string, texts: readonly string[]): AddBody {
  return {
    request_id: requestId,
    user_id: userId,
    session_id: `session-${userId}`,
    messages: texts.map((content, m) => ({ role: m % 2 === 0 ? 'Caroline' : 'Melanie', content, timestamp: 1_700_000_000_000 + m })),
  };
}

/** Words no two texts share by accident: a search for one finds its text by BM25 alone. */
export function uniqueText(tag: string): string {
  const letters = 'bcdfghjklmnpqrstvwxz';
  const word = Array.from({ length: 8 }, () => letters[Math.floor(Math.random() * letters.length)]).join('');
  return `Marker ${word} noted for ${tag}`;
}

export async function addOk(replica: ServerProcess, body: AddBody): Promise<void> {
  const reply = await send(`${replica.url}/add`, { body });
  expect(reply.status, reply.text).toBe(200);
  expect(reply.body).toMatchObject({ success: true, request_id: body.request_id, user_id: body.user_id });
}

export interface Hit {
  id: string;
  content: string;
}

export async function search(replica: ServerProcess, userId: string, query: string, topK = 100): Promise<Hit[]> {
  const reply = await send(`${replica.url}/search`, { body: { query, user_id: userId, top_k: topK } });
  expect(reply.status, reply.text).toBe(200);
  return reply.body.data as Hit[];
}

/** Hits whose content is this text (content carries a "[time] Speaker: " prefix). */
export function hitsOf(hits: readonly Hit[], text: string): Hit[] {
  return hits.filter((hit) => hit.content.endsWith(text));
}

/** Every stored text of a user (the MemoryPool list, newest first), with how often each is stored. */
export async function storedTexts(replica: ServerProcess, userId: string): Promise<Map<string, number>> {
  const reply = await send(`${replica.url}/mem/list?user_id=${encodeURIComponent(userId)}&limit=1000`);
  expect(reply.status, reply.text).toBe(200);
  const counts = new Map<string, number>();
  for (const memory of reply.body as Array<{ text: string; user_id: string }>) {
    expect(memory.user_id).toBe(userId);
    counts.set(memory.text, (counts.get(memory.text) ?? 0) + 1);
  }
  return counts;
}

export async function inPool<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) await work(items[next++]);
    }),
  );
}
