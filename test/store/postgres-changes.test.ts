import { describe, expect, it } from 'vitest';
import { freshDatabase, storeDraft as draft, storeReplica as replica, withClient } from '../support/postgres.js';

describe("PostgreSQL's change feed under concurrent writers (memorypool_record_changes, migration 7)", () => {
  it('numbers the events of racing writes of many users on two replicas 1..N with no gap, and a reader following along never sees a later seq before an earlier one', async () => {
    const url = await freshDatabase();
    const [a, b] = [await replica(url), await replica(url)];
    const writes = 60;
    let writing = true;
    // A reader on its own replica, following the feed while the writes race: whatever it has seen
    // must stay a prefix of the final feed (an event numbered after one not yet committed would
    // show up as a gap that later fills).
    const reader = await replica(url);
    const seen: number[] = [];
    const following = (async () => {
      while (writing || seen.length < writes * 2) {
        const read = await reader.readChanges(seen.at(-1) ?? 0, 500);
        for (const event of read.events) seen.push(event.seq);
        if (read.events.length === 0 && !writing) break;
      }
    })();
    await Promise.all(
      Array.from({ length: writes }, (_, i) => {
        const userId = `racer-${i}`;
        const store = i % 2 === 0 ? a : b;
        return store.append(userId, [draft(userId), draft(userId)]);
      }),
    );
    writing = false;
    await following;

    const all = await a.readChanges(0, 1_000);
    expect(all.events.map((event) => event.seq)).toEqual(Array.from({ length: writes * 2 }, (_, i) => i + 1));
    expect(all.last).toBe(writes * 2);
    expect(seen).toEqual(all.events.map((event) => event.seq));
    // One write's two events are consecutive: its call numbered them together.
    for (let i = 0; i < all.events.length; i += 2) {
      expect(all.events[i].user_id).toBe(all.events[i + 1].user_id);
      expect([all.events[i].memory_id, all.events[i + 1].memory_id]).toEqual([expect.stringMatching(/^m-/), expect.stringMatching(/^m-/)]);
    }
    expect(new Set(all.events.map((event) => event.user_id)).size).toBe(writes);
    await withClient(url, async (client) => {
      expect((await client.query<{ last_seq: string }>('SELECT last_seq FROM change_counter')).rows).toEqual([{ last_seq: String(writes * 2) }]);
    });
  }, 60_000);
});
