import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sleep, type ServerProcess } from '../support/server-process.js';
import { createTestDatabase, freshDatabase, type TestDatabase } from '../support/postgres.js';
import { addBody, addOk, hitsOf, inPool, search, send, startReplicas, storedTexts, uniqueText } from '../support/replica-cluster.js';

/**
 * Read-your-writes across replicas: a write acknowledged by one replica is seen by a Search on
 * another that starts after the acknowledgement, although that replica had the user cached
 * (it searched the user just before). Every trial must hold: zero misses.
 */

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(async () => {
  await database?.drop();
});

/** Trials alternate which replica writes and which reads. */
function roles(replicas: ServerProcess[], trial: number): [ServerProcess, ServerProcess] {
  return trial % 2 === 0 ? [replicas[0], replicas[1]] : [replicas[1], replicas[0]];
}

describe('read-your-writes across replicas', () => {
  it('an Add acknowledged by one replica is found at once by a Search on the other (8 clients x 10 trials)', async () => {
    const replicas = await startReplicas(2, database.url);
    const misses: string[] = [];
    await inPool([0, 1, 2, 3, 4, 5, 6, 7], 8, async (client) => {
      const userId = `ryw-add-${client}`;
      for (let trial = 0; trial < 10; trial++) {
        const [writer, reader] = roles(replicas, trial + client);
        const text = uniqueText(`${userId} trial ${trial}`);
        await search(reader, userId, text); // the reader has the user cached, as it was before the write
        await addOk(writer, addBody(userId, `ryw-${client}-${trial}`, [text]));
        if (hitsOf(await search(reader, userId, text), text).length !== 1) misses.push(`${userId} trial ${trial}`);
      }
    });
    expect(misses).toEqual([]);
    for (const replica of replicas) expect((await storedTexts(replica, 'ryw-add-0')).size).toBe(10);
  });

  it('a memory deleted on one replica is gone at once from the other', async () => {
    const replicas = await startReplicas(2, database.url);
    const userId = 'ryw-delete-memory';
    const texts = Array.from({ length: 24 }, (_, n) => uniqueText(`memory ${n}`));
    await addOk(replicas[0], addBody(userId, 'ryw-delete-memory-all', texts));
    const misses: string[] = [];
    for (const [trial, text] of texts.entries()) {
      const [writer, reader] = roles(replicas, trial);
      const [hit] = hitsOf(await search(reader, userId, text), text);
      expect(hit, text).toBeDefined();
      const deleted = await send(`${writer.url}/mem/${encodeURIComponent(hit.id)}?user_id=${userId}`, { method: 'DELETE' });
      expect(deleted.status, deleted.text).toBe(200);
      if (hitsOf(await search(reader, userId, text), text).length !== 0) misses.push(`search after delete ${trial}`);
      const get = await send(`${reader.url}/mem/${encodeURIComponent(hit.id)}?user_id=${userId}`);
      if (get.status !== 404) misses.push(`get after delete ${trial}: ${get.status}`);
    }
    expect(misses).toEqual([]);
    for (const replica of replicas) expect((await storedTexts(replica, userId)).size).toBe(0);
  });

  it('a memory updated on one replica is found by its new text at once on the other, never by the old one (4 clients x 8 trials)', async () => {
    const replicas = await startReplicas(2, database.url);
    const misses: string[] = [];
    await inPool([0, 1, 2, 3], 4, async (client) => {
      const userId = `ryw-update-${client}`;
      const mem = (replica: ServerProcess, suffix = '') => `${replica.url}/mem${suffix}`;
      let text = uniqueText(`${userId} version 1`);
      const created = await send(mem(replicas[client % 2]), { body: { text, user_id: userId, metadata: { client } } });
      expect(created.status, created.text).toBe(201);
      const id = created.body.id as string;
      for (let trial = 0; trial < 8; trial++) {
        const [writer, reader] = roles(replicas, trial + client);
        const searchOn = async (query: string) => {
          const reply = await send(`${mem(reader, '/search')}?user_id=${userId}&limit=5&meta.client=${client}&q=${encodeURIComponent(query)}`);
          expect(reply.status, reply.text).toBe(200);
          return reply.body as Array<{ id: string; text: string; version: number }>;
        };
        await searchOn(text); // the reader has the user cached, as it was before the update
        const old = text;
        text = uniqueText(`${userId} version ${trial + 2}`);
        const updated = await send(`${mem(writer)}/${id}?user_id=${userId}`, { method: 'PATCH', body: { text } });
        expect(updated.status, updated.text).toBe(200);
        expect(updated.body).toMatchObject({ id, version: trial + 2, text });
        const fresh = await searchOn(text);
        if (fresh[0]?.id !== id || fresh[0]?.text !== text || fresh[0]?.version !== trial + 2) misses.push(`${userId} trial ${trial}: new text not first`);
        if ((await searchOn(old)).some((hit) => hit.text === old)) misses.push(`${userId} trial ${trial}: old text found`);
        const history = await send(`${mem(reader)}/${id}/history?user_id=${userId}`);
        if (history.body.versions?.length !== trial + 2 || history.body.versions.at(-1).text !== text) misses.push(`${userId} trial ${trial}: history ${history.text}`);
      }
    });
    expect(misses).toEqual([]);
  });

  it('a user deleted on one replica is gone at once from the other, and written again from scratch', async () => {
    const replicas = await startReplicas(2, database.url);
    const misses: string[] = [];
    for (let trial = 0; trial < 12; trial++) {
      const [writer, reader] = roles(replicas, trial);
      const userId = `ryw-delete-user-${trial % 3}`; // each user is deleted and written again several times
      const before = uniqueText(`before ${trial}`);
      await addOk(reader, addBody(userId, `ryw-user-${trial}-before`, [before]));
      expect(hitsOf(await search(reader, userId, before), before)).toHaveLength(1);
      const deleted = await send(`${writer.url}/users/${userId}`, { method: 'DELETE' });
      expect(deleted.status, deleted.text).toBe(200);
      expect(deleted.body).toEqual({ deleted_user: userId, deleted: 1 });
      if ((await search(reader, userId, before)).length !== 0) misses.push(`search after delete ${trial}`);
      // Written again through the replica that deleted, read on the one that had cached the old user.
      const after = uniqueText(`after ${trial}`);
      await addOk(writer, addBody(userId, `ryw-user-${trial}-after`, [after]));
      const hits = await search(reader, userId, `${before} ${after}`);
      if (hits.length !== 1 || hitsOf(hits, after).length !== 1) misses.push(`search after rewrite ${trial}: ${hits.map((hit) => hit.content).join(' | ')}`);
      await send(`${reader.url}/users/${userId}`, { method: 'DELETE' });
    }
    expect(misses).toEqual([]);
  });

  it('memories purged by another replica\'s retention sweep are gone at once from a replica that had them cached', async () => {
    const databaseUrl = await freshDatabase(); // the sweep covers every user of its database
    const replicas = await startReplicas(2, databaseUrl);
    const old = Array.from({ length: 12 }, (_, n) => uniqueText(`old ${n}`));
    await addOk(replicas[0], addBody('ryw-purge', 'ryw-purge-old', old));
    for (const text of old) expect(hitsOf(await search(replicas[1], 'ryw-purge', text), text)).toHaveLength(1);
    await sleep(1_500); // older than the retention below once this wait is over
    // A third replica with a retention of about one second sweeps at its start.
    const [sweeper] = await startReplicas(1, databaseUrl, { MEMORYPOOL_RETENTION_DAYS: String(1 / 86_400), MEMORYPOOL_LOG_LEVEL: 'info' });
    const swept = await sweeper.waitForLog((record) => record.msg === 'retention: purged expired memories', 10_000);
    expect(swept.purged).toBe(old.length);
    const misses: string[] = [];
    for (const text of old) if (hitsOf(await search(replicas[1], 'ryw-purge', text), text).length !== 0) misses.push(text);
    expect(misses).toEqual([]);
    expect((await storedTexts(replicas[1], 'ryw-purge')).size).toBe(0);
  });
});
