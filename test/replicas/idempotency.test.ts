import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { addBody, inPool, send, startReplicas, storedTexts, uniqueText } from '../support/replica-cluster.js';

/**
 * Idempotency on (request_id, user_id) holds across replicas: the same Add sent to two
 * replicas at the same instant is stored once, and when two different bodies race under one
 * request id exactly one of them is stored, whole.
 */

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

const USERS = ['idem-0', 'idem-1', 'idem-2'];

describe('idempotent Adds across replicas', () => {
  it('stores once the same Add sent to two replicas at once, and one whole body of two racing under one id', async () => {
    const replicas = await startReplicas(2, database.url);
    const same = Array.from({ length: 30 }, (_, n) => {
      const userId = USERS[n % USERS.length];
      return addBody(userId, `same-${n}`, [uniqueText(`same ${n} first`), uniqueText(`same ${n} second`)]);
    });
    await inPool(same, 6, async (body) => {
      const replies = await Promise.all(replicas.map((replica) => send(`${replica.url}/add`, { body })));
      for (const reply of replies) {
        expect(reply.status, reply.text).toBe(200);
        expect(reply.body).toEqual({ success: true, request_id: body.request_id, user_id: body.user_id, session_id: body.session_id });
      }
    });

    const racing = Array.from({ length: 20 }, (_, n) => {
      const userId = USERS[n % USERS.length];
      return [0, 1].map((variant) => addBody(userId, `racing-${n}`, [uniqueText(`racing ${n} body ${variant} a`), uniqueText(`racing ${n} body ${variant} b`)]));
    });
    await inPool(racing, 6, async (bodies) => {
      const replies = await Promise.all(bodies.map((body, n) => send(`${replicas[n].url}/add`, { body })));
      for (const reply of replies) expect(reply.status, reply.text).toBe(200);
    });

    // One store behind both: each replica lists the same memories, every Add's once, one body per racing id.
    const [first, second] = await Promise.all(
      replicas.map(async (replica) => {
        const stored = new Map<string, number>();
        for (const userId of USERS) for (const [text, count] of await storedTexts(replica, userId)) stored.set(text, count);
        return stored;
      }),
    );
    expect(second).toEqual(first);
    for (const body of same) for (const message of body.messages) expect(first.get(message.content), message.content).toBe(1);
    for (const bodies of racing) {
      const kept = bodies.filter((body) => body.messages.some((message) => first.has(message.content)));
      expect(kept, bodies[0].request_id).toHaveLength(1);
      for (const message of kept[0].messages) expect(first.get(message.content), message.content).toBe(1);
    }
    expect([...first.values()].reduce((sum, count) => sum + count, 0)).toBe(same.length * 2 + racing.length * 2);
  });
});
