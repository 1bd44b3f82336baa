import { describe, expect, it } from 'vitest';
import type { UnitDraft } from '../../src/store/memory-store.js';
import type { PostgresStore } from '../../src/store/postgres-store.js';
import { readStoredFeatures, withStoredFeatures } from '../../src/memory/unit-features.js';
import { freshDatabase, storeDraft, storeReplica as replica, withClient } from '../support/postgres.js';

/** A draft as the service writes it: its features stored with it (`fx`). */
function featured(userId: string, text: string): UnitDraft {
  const draft = storeDraft(userId, text);
  return { ...draft, record: withStoredFeatures(draft.record) };
}

/** What a replica that has never seen the user loads: each memory's text and its stored features, if any. */
async function loaded(url: string, userId: string): Promise<Array<{ text: string; fx: unknown; seq: number }>> {
  const store = await replica(url);
  const { units } = await store.changesSince(userId, 0);
  return units.map(({ record }) => ({ text: record.text, fx: record.fx, seq: record.seq }));
}

async function featureRows(url: string, userId: string): Promise<number[]> {
  return withClient(url, async (client) => (await client.query<{ seq: string }>('SELECT seq FROM memory_features WHERE user_id = $1 ORDER BY seq', [userId])).rows.map((row) => Number(row.seq)));
}

const at = () => new Date().toISOString();

describe("PostgreSQL: a memory's stored features (memory_features), read by a cold load instead of derived", () => {
  it('keeps the features of each memory written, and a replica loading the user gets them back whole', async () => {
    const url = await freshDatabase();
    const store: PostgresStore = await replica(url);
    const drafts = [featured('u', 'Melanie painted a lake at sunrise last weekend.'), featured('u', 'Caroline is reading "Becoming" by Michelle Obama.')];
    await store.append('u', drafts);
    const units = await loaded(url, 'u');
    expect(units.map(({ fx }) => fx)).toEqual(drafts.map(({ record }) => record.fx));
    // Whole: the fingerprint matches the record it is loaded with, so the load reads them instead of deriving.
    const { units: records } = await (await replica(url)).changesSince('u', 0);
    for (const { record } of records) expect(readStoredFeatures(record, record.fx)).not.toBeNull();
    // A memory written without them (by a replica of an earlier version) loads without them, to be derived.
    await store.append('u', [storeDraft('u', 'no features here')]);
    expect((await loaded(url, 'u')).at(-1)).toMatchObject({ text: 'no features here', fx: undefined });
    expect(await featureRows(url, 'u')).toEqual([0, 1]);
  });

  it('moves them with an updated memory to its new seq (still whole when the text stayed), and removes them with a deleted memory or user', async () => {
    const url = await freshDatabase();
    const store = await replica(url);
    const [a, b, c] = [featured('u', 'Jon opened a dance studio downtown.'), featured('u', 'Gina lost her job at Door Dash.'), featured('u', 'Jon went to Paris in May.')];
    await store.append('u', [a, b, c]);
    expect(await featureRows(url, 'u')).toEqual([0, 1, 2]);

    // Metadata only: the memory moves to seq 3, its features with it, and they still hold.
    await store.update('u', a.record.id, { metadata: { checked: true }, updatedAt: at() });
    expect(await featureRows(url, 'u')).toEqual([1, 2, 3]);
    const moved = (await (await replica(url)).changesSince('u', 0)).units.find(({ record }) => record.id === a.record.id)!.record;
    expect(moved.seq).toBe(3);
    expect(readStoredFeatures(moved, moved.fx)).not.toBeNull();

    // A new text: the row moves too, but no longer matches the record and is not used.
    await store.update('u', b.record.id, { text: 'Gina started an online clothing store.', updatedAt: at(), vector: new Float32Array(8).fill(9) });
    const rewritten = (await (await replica(url)).changesSince('u', 0)).units.find(({ record }) => record.id === b.record.id)!.record;
    expect(rewritten.seq).toBe(4);
    expect(await featureRows(url, 'u')).toEqual([2, 3, 4]);
    expect(readStoredFeatures(rewritten, rewritten.fx)).toBeNull();

    await store.remove('u', [c.record.id]);
    expect(await featureRows(url, 'u')).toEqual([3, 4]);

    // A batch: one added, one updated, one removed.
    const d = featured('u', 'Gina and Jon met at the studio.');
    await store.batch('u', [
      { kind: 'add', draft: d },
      { kind: 'update', id: a.record.id, patch: { importance: 0.9, updatedAt: at() } },
      { kind: 'remove', id: b.record.id },
    ]);
    const after = await loaded(url, 'u');
    expect(after.map(({ text }) => text).sort()).toEqual([a.record.text, d.record.text].sort());
    expect((await featureRows(url, 'u')).sort((x, y) => x - y)).toEqual(after.map(({ seq }) => seq).sort((x, y) => x - y));
    expect(after.every(({ fx }) => typeof fx === 'string')).toBe(true);

    await store.append('other', [featured('other', 'Someone else entirely.')]);
    await store.deleteUser('u');
    expect(await featureRows(url, 'u')).toEqual([]);
    expect(await featureRows(url, 'other')).toEqual([0]);
  });
});
