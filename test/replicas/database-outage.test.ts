import { describe, expect, it } from 'vitest';
import { startThrowawayPostgres } from '../../bench/throwaway-postgres.js';
import { sleep } from '../support/server-process.js';
import { register } from '../support/helper.js';
import { addBody, hitsOf, inPool, search, send, startReplicas, storedTexts, type AddBody, type Reply } from '../support/replica-cluster.js';

/**
 * PostgreSQL stopped and started again under load. While it is down every request answers 503
 * with retry-after (the platform retries those); no Add is acknowledged without its commit; once
 * it is back the replicas recover by themselves, and retries store nothing twice.
 *
 * This suite stops its database server, so it always runs one of its own (never the shared
 * MEMORYPOOL_TEST_DATABASE_URL).
 */

const CLIENTS = 8;
/** Searchers that only read, so that reads of cached users are watched through the outage too. */
const SEARCHERS = 2;
const USERS = ['outage-0', 'outage-1'];
const PHASE_MS = { before: 1_500, down: 2_500, after: 1_500 };
/** Pause between a client's Adds: keeps the Adds per user under the list limit (1000) on any machine. */
const PACE_MS = 100;
const MAX_ADDS_PER_CLIENT = 120;
const RECOVERY_TIMEOUT_MS = 30_000;

describe('PostgreSQL stopped and restarted under load', () => {
  it('answers 503 with retry-after while it is down, acknowledges nothing uncommitted, and recovers by itself', async () => {
    const postgres = await startThrowawayPostgres({ fsync: false });
    register(() => postgres.destroy());
    const databaseUrl = await postgres.createDatabase('outage');
    const replicas = await startReplicas(2, databaseUrl);
    for (const replica of replicas) for (const userId of USERS) await search(replica, userId, 'warm-up');

    const bodies: AddBody[] = [];
    const addReplies: Array<{ body: AddBody; reply: Reply }> = [];
    const searchReplies: Reply[] = [];
    let stopClients = false;
    let downFrom = Infinity;
    let downUntil = -Infinity;
    const attempt = async (url: string, body: unknown): Promise<Reply | null> => {
      try {
        return await send(url, { body });
      } catch {
        return null; // refused or reset: the replica never answered, so nothing was acknowledged
      }
    };
    const adders = Array.from({ length: CLIENTS }, async (_, client) => {
      for (let n = 0; !stopClients && n < MAX_ADDS_PER_CLIENT; n++) {
        const body = addBody(USERS[client % USERS.length], `outage-${client}-${n}`, [`Outage note ${client}-${n}: kettle ${n % 7} lantern ${client}`]);
        bodies.push(body);
        // Like the platform: the same Add again until it is acknowledged, to either replica.
        for (let retry = 0; !stopClients; retry++) {
          const reply = await attempt(`${replicas[(client + n + retry) % 2].url}/add`, body);
          if (reply !== null) addReplies.push({ body, reply });
          if (reply?.status === 200) break;
          await sleep(50); // the retry-after pause, shortened
        }
        await sleep(PACE_MS);
      }
    });
    const searchers = Array.from({ length: SEARCHERS }, async (_, searcher) => {
      for (let n = 0; !stopClients; n++) {
        const reply = await attempt(`${replicas[searcher].url}/search`, { query: `kettle ${n % 7}`, user_id: USERS[n % USERS.length], top_k: 10 });
        if (reply !== null) searchReplies.push(reply);
        await sleep(50);
      }
    });

    try {
      await sleep(PHASE_MS.before);
      await postgres.stop();
      downFrom = Date.now();
      await sleep(PHASE_MS.down);
      downUntil = Date.now();
      await postgres.start();

      // Recovery: each replica answers a Search again, without being restarted.
      const recoveryStarted = Date.now();
      for (const [n, replica] of replicas.entries()) {
        for (;;) {
          const probe = await attempt(`${replica.url}/search`, { query: 'probe', user_id: USERS[0], top_k: 1 });
          if (probe?.status === 200) break;
          expect(Date.now() - recoveryStarted, `replica ${n} not recovered`).toBeLessThan(RECOVERY_TIMEOUT_MS);
          await sleep(100);
        }
      }
      await sleep(PHASE_MS.after);
    } finally {
      stopClients = true;
      await Promise.all([...adders, ...searchers]);
    }
    for (const replica of replicas) expect(replica.child.exitCode, replica.stderr()).toBeNull();

    // While it was down: only 503s, each with retry-after.
    const duringOutage = (reply: Reply) => reply.sentAt >= downFrom && reply.answeredAt <= downUntil;
    const replies = [...addReplies.map(({ reply }) => reply), ...searchReplies];
    const downReplies = replies.filter(duringOutage);
    expect(downReplies.length).toBeGreaterThan(CLIENTS + SEARCHERS);
    for (const reply of downReplies) {
      expect(reply.status, reply.text).toBe(503);
      expect(reply.retryAfter).toMatch(/^\d+$/);
    }
    // At any time: a 200 or a 503, never another failure (a 500 would leave the platform unsure whether to retry).
    const statuses = new Set(replies.map((reply) => reply.status));
    expect([...statuses].sort()).toEqual([200, 503]);

    // Every acknowledged Add was committed: both replicas return it, once; and the last ones are searchable.
    const acked = [...new Set(addReplies.filter(({ reply }) => reply.status === 200).map(({ body }) => body))];
    expect(acked.length).toBeGreaterThan(CLIENTS * 2);
    for (const replica of replicas) {
      for (const userId of USERS) {
        const stored = await storedTexts(replica, userId);
        for (const body of acked.filter((add) => add.user_id === userId)) expect(stored.get(body.messages[0].content), body.request_id).toBe(1);
        for (const [text, count] of stored) expect(count, text).toBe(1);
      }
    }
    for (const body of acked.slice(-8)) {
      const text = body.messages[0].content;
      expect(hitsOf(await search(replicas[1], body.user_id, text), text), body.request_id).toHaveLength(1);
    }

    // Retrying every Add, answered or not: 200 each, every Add stored exactly once.
    await inPool(bodies, 8, async (body) => {
      const reply = await send(`${replicas[bodies.indexOf(body) % 2].url}/add`, { body });
      expect(reply.status, reply.text).toBe(200);
    });
    for (const userId of USERS) {
      const stored = await storedTexts(replicas[0], userId);
      const expected = bodies.filter((body) => body.user_id === userId);
      expect(stored.size).toBe(expected.length);
      for (const body of expected) expect(stored.get(body.messages[0].content), body.request_id).toBe(1);
    }
  });
});
