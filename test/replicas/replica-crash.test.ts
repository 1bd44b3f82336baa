import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../support/postgres.js';
import { addBody, hitsOf, inPool, search, send, startReplicas, storedTexts, type AddBody } from '../support/replica-cluster.js';

/**
 * SIGKILL one of three replicas while 32 clients add through all three. An Add acknowledged by
 * any replica, the killed one included, was committed: the survivors return it, once. Retrying
 * every Add on the survivors (answered or not, both at once) stores nothing twice.
 */

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

const CLIENTS = 32;
const USERS = ['crash-0', 'crash-1', 'crash-2', 'crash-3'];
const WORDS = ['garden', 'violin', 'harbor', 'pottery', 'marathon', 'lantern', 'orchid', 'glacier', 'sailing', 'quilt', 'canyon', 'espresso', 'falcon', 'meadow', 'origami', 'tundra'];
/** Acknowledged Adds before the kill; the cap per client keeps every user under the list limit (1000). */
const ACKS_BEFORE_KILL = 96;
const MAX_ADDS_PER_CLIENT = 16;

function plannedAdd(client: number, n: number): AddBody {
  const texts = Array.from({ length: 1 + ((client + n) % 3) }, (_, m) => {
    const words = [0, 1, 2].map((k) => WORDS[(client * 7 + n * 3 + m * 5 + k * 11) % WORDS.length]);
    return `Note ${client}-${n}-${m}: ${words.join(' ')} on day ${n}`;
  });
  return addBody(USERS[client % USERS.length], `crash-${client}-${n}`, texts);
}

describe('a replica killed under load', () => {
  it('loses no acknowledged Add, and retries on the survivors store nothing twice', async () => {
    const replicas = await startReplicas(3, database.url);
    const [victim, ...survivors] = replicas;
    const attempted: AddBody[] = [];
    const acked = new Set<AddBody>();
    const ackedByVictim = new Set<AddBody>();
    let killed = false;

    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, client) => {
        for (let n = 0; n < MAX_ADDS_PER_CLIENT; n++) {
          const body = plannedAdd(client, n);
          // Clients spread over the three; once the victim is dead a client moves on, like a load balancer would.
          const replica = killed ? survivors[(client + n) % 2] : replicas[(client + n) % 3];
          attempted.push(body);
          try {
            const reply = await send(`${replica.url}/add`, { body });
            if (reply.status !== 200) continue; // not acknowledged: retried below
            acked.add(body);
            if (replica === victim) ackedByVictim.add(body);
          } catch {
            continue; // the connection died with the victim: the outcome is unknown
          }
          if (!killed && acked.size >= ACKS_BEFORE_KILL) {
            killed = true;
            victim.child.kill('SIGKILL');
          }
        }
      }),
    );
    expect(killed).toBe(true);
    expect((await victim.exited).signal).toBe('SIGKILL');
    expect(ackedByVictim.size).toBeGreaterThan(0);

    // Every acknowledged Add is stored once, on both survivors, and nothing is stored twice.
    for (const survivor of survivors) {
      for (const userId of USERS) {
        const stored = await storedTexts(survivor, userId);
        for (const body of [...acked].filter((add) => add.user_id === userId)) {
          for (const message of body.messages) expect(stored.get(message.content), `${body.request_id}: ${message.content}`).toBe(1);
        }
        for (const [text, count] of stored) expect(count, text).toBe(1);
      }
    }
    // ...and searchable: everything the victim acknowledged, and the newest of the rest.
    const checked = [...ackedByVictim, ...[...acked].slice(-16)];
    await inPool(checked, 4, async (body) => {
      const text = body.messages[0].content;
      const hits = await search(survivors[checked.indexOf(body) % 2], body.user_id, text);
      expect(hitsOf(hits, text), `${body.request_id} on a survivor`).toHaveLength(1);
    });

    // Retry every Add, answered or not, on both survivors at once: 200 each, nothing stored twice.
    await inPool(attempted, 8, async (body) => {
      const replies = await Promise.all(survivors.map((survivor) => send(`${survivor.url}/add`, { body })));
      for (const reply of replies) {
        expect(reply.status, reply.text).toBe(200);
        expect(reply.body).toMatchObject({ success: true, request_id: body.request_id, user_id: body.user_id });
      }
    });
    for (const userId of USERS) {
      const stored = await storedTexts(survivors[0], userId);
      const expected = attempted.filter((add) => add.user_id === userId).flatMap((add) => add.messages.map((message) => message.content));
      expect(stored.size).toBe(expected.length);
      for (const text of expected) expect(stored.get(text), text).toBe(1);
    }
  });
});
