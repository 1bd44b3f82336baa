import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { MIGRATIONS } from '../../src/store/postgres-migrations.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { decodeJson, decodeText, encodeJson, encodeKey, encodeText, isKeyDigest, KEY_INLINE_BYTES } from '../../src/store/postgres-text.js';
import { register } from '../support/helper.js';
import { freshDatabase, withClient } from '../support/postgres.js';

const ESC = '\uFDD0';
/** Strings dense in what the encoding treats specially. */
const tricky = fc.string({ unit: fc.constantFrom('\u0000', ESC, '0', 'h', '\\', 'u', '"', 'a', '\u0001', 'é', '😀'), maxLength: 30 });
const anyText = fc.oneof(tricky, fc.string({ unit: 'grapheme', maxLength: 20 }));

describe('the PostgreSQL text encoding', () => {
  it('is one-to-one: text and JSON come back exactly, and nothing encoded holds a NUL', () => {
    fc.assert(
      fc.property(anyText, anyText, (a, b) => {
        expect(decodeText(encodeText(a))).toBe(a);
        expect(encodeText(a).includes('\u0000')).toBe(false);
        if (a !== b) expect(encodeText(a)).not.toBe(encodeText(b));
        const value = { [a]: [b, a, { nested: b }], n: 1.5 };
        const json = encodeJson(value);
        expect(json.includes('\\u0000')).toBe(false);
        expect(decodeJson(json)).toEqual(value);
      }),
      { numRuns: 2000 },
    );
  });

  it('leaves strings without NUL or the escape as they are (old rows read unchanged)', () => {
    for (const text of ['plain', 'tab\t "quoted" \\u0000 literally', '😀 ünï \u0001']) {
      expect(encodeText(text)).toBe(text);
      expect(decodeText(text)).toBe(text);
      expect(encodeJson({ text })).toBe(JSON.stringify({ text }));
    }
  });

  it('digests a key too long for an index entry, and only such a key', () => {
    expect(encodeKey('u'.repeat(300))).toBe('u'.repeat(300));
    expect(isKeyDigest(encodeKey('u'.repeat(300)))).toBe(false);
    const long = encodeKey('é'.repeat(KEY_INLINE_BYTES));
    expect(isKeyDigest(long)).toBe(true);
    expect(long).toHaveLength(2 + 64);
    expect(encodeKey('é'.repeat(KEY_INLINE_BYTES))).toBe(long);
    expect(encodeKey('é'.repeat(KEY_INLINE_BYTES) + '\u0000')).not.toBe(long);
    // No encoded string spells a digest: after the escape come only the escape or "0".
    expect(isKeyDigest(encodeKey(`${ESC}h${'0'.repeat(64)}`))).toBe(false);
  });
});

describe('PostgreSQL migration 3: rows written before it', () => {
  it('read unchanged, those holding the escape character or keys too long for the new index form included', async () => {
    const url = await freshDatabase();
    const before = MIGRATIONS.filter((migration) => migration.version < 3);
    const vector = Buffer.from(new Float32Array([1, 0, 0, 0]).buffer);
    const escUser = `user${ESC}0`;
    const longUser = 'L'.repeat(1500);
    const longId = `id-${'x'.repeat(1200)}`;
    const oldRecord = (text: string) => ({ text, tags: [`tag${ESC}`], importance: 0.5, source: 'cli', created_at: '2024-05-01T10:00:00.000Z', version: 2, updated_at: '2024-06-01T10:00:00.000Z', metadata: { [`k${ESC}`]: `v${ESC}${ESC}0` } });
    await withClient(url, async (client) => {
      await client.query('CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
      for (const migration of before) {
        await client.query(migration.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      }
      for (const [user, id, text] of [['plain-user', 'm-plain', 'I live in Paris'], [escUser, `m${ESC}`, `noncharacter ${ESC}0 here`], [longUser, longId, 'a long user and id']]) {
        await client.query('INSERT INTO users (user_id, next_seq, version, memory_count) VALUES ($1, 1, 3, 1)', [user]);
        await client.query(`INSERT INTO memories (user_id, seq, id, created_at, record, vector, model) VALUES ($1, 0, $2, '2024-05-01T10:00:00Z', $3::jsonb, $4, $5)`, [user, id, JSON.stringify(oldRecord(text)), vector, `model${ESC}`]);
        await client.query(`INSERT INTO memory_versions (user_id, id, version, entry) VALUES ($1, $2, 1, $3::jsonb)`, [user, id, JSON.stringify({ version: 1, text: `was ${ESC}`, tags: [], importance: 0.5, metadata: {}, updated_at: '2024-05-01T10:00:00.000Z' })]);
        await client.query('INSERT INTO add_requests (user_id, request_id) VALUES ($1, $2)', [user, user === longUser ? 'r'.repeat(1100) : `r${ESC}`]);
      }
    });

    const store = new PostgresStore({ url, logger: silentLogger() });
    register(() => store.close());
    await store.init();
    expect(new Set(await store.listUsers())).toEqual(new Set(['plain-user', escUser, longUser]));
    for (const [user, id, text] of [['plain-user', 'm-plain', 'I live in Paris'], [escUser, `m${ESC}`, `noncharacter ${ESC}0 here`], [longUser, longId, 'a long user and id']]) {
      const { units, version } = await store.load(user);
      expect(version).toBe(3);
      expect(units.map((unit) => unit.record)).toEqual([{ ...oldRecord(text), id, user_id: user, seq: 0, model: `model${ESC}` }]);
      expect((await store.history(user, id)).map((entry) => entry.text)).toEqual([`was ${ESC}`]);
      expect(await store.hasRequest(user, user === longUser ? 'r'.repeat(1100) : `r${ESC}`)).toBe(true);
      // Written after the upgrade, through the same keys.
      const updated = await store.update(user, id, { text: `now \u0000 ${ESC}`, updatedAt: '2025-01-01T00:00:00.000Z' });
      expect(updated?.record.text).toBe(`now \u0000 ${ESC}`);
      expect((await store.load(user)).units[0].record).toMatchObject({ id, text: `now \u0000 ${ESC}`, version: 3 });
      expect(await store.history(user, id)).toHaveLength(2);
      expect((await store.remove(user, [id])).removed).toEqual([{ id, seq: 1 }]);
      expect(await store.history(user, id)).toEqual([]);
    }
  });
});
