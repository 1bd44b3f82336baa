import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { MemoryFields } from '../../src/domain/memory.js';
import { corpusUnit } from '../../src/memory/corpus-units.js';
import { deriveFeatures, FEATURES_VERSION, fingerprint, readStoredFeatures, withStoredFeatures } from '../../src/memory/unit-features.js';
import type { StoredRecord } from '../../src/store/stored-record.js';
import { openService, tempDir } from '../support/helper.js';
import { TWO_SERVICES } from '../support/two-services.js';

/**
 * A memory's terms and cues, stored with it at a write and read back at a load instead of being
 * derived again (src/memory/unit-features.ts): what is read must be what would be derived, and
 * anything that no longer matches its record must be derived afresh.
 */

/** Texts that exercise every derivation: time expressions, questions, first person, names, numbers, links. */
const TEXTS: Array<[string, string | undefined]> = [
  ['I went hiking with my sister yesterday, the trail near Lake Tahoe was stunning!', 'Caroline'],
  ['Have you ever been to the LGBTQ support group on Tuesdays?', 'Melanie'],
  ['We adopted a puppy named Oscar last month, he is a golden retriever.', 'Melanie'],
  ['My 5k time dropped to 24:30 in May 2023, 2.5km splits felt easy.', 'John'],
  ["I've been reading \"Becoming Nicole\" by Amy Ellis Nutt - such a powerful book.", 'Caroline'],
  ['Check https://example.com/recipes for the lasagna I made on 8 May 2023 at 3pm.', undefined],
  ['The meeting with Ann moved to Thursday at 10:00, three weeks ago we met at Google.', 'Tim'],
  ["Grandma's recipe for apple pie came from Vienna in the 1990s.", 'Jon'],
  ['ok', undefined],
  ['What do you think about painting sunsets during the summer of 2022?', 'Gina'],
];

function recordOf(text: string, role: string | undefined, i: number): StoredRecord {
  return {
    id: `m${i}`,
    user_id: 'u',
    text,
    tags: i % 3 === 0 ? ['Outdoors'] : [],
    importance: 0.5,
    source: 'add',
    created_at: '2023-05-09T12:00:00.000Z',
    occurred_at: new Date(Date.UTC(2023, 4, 9 + i, 13, 56)).toISOString(),
    ...(role !== undefined ? { role } : {}),
    seq: i,
  };
}

const RECORDS = TEXTS.map(([text, role], i) => recordOf(text, role, i));

/** As a store line holds it: through JSON and back. */
const stored = (record: MemoryFields): unknown => JSON.parse(JSON.stringify(withStoredFeatures(record).fx));

describe('stored unit features', () => {
  it('reads back, through JSON, exactly the corpus unit a derivation makes, for every kind of text', () => {
    for (const record of RECORDS) {
      const derived = corpusUnit(record, null);
      const read = corpusUnit(record, null, undefined, stored(record));
      expect(read).toEqual(derived);
      // And with a load's shared strings, as admitUnits passes them.
      expect(corpusUnit(record, null, new Map(), stored(record))).toEqual(corpusUnit(record, null, new Map()));
    }
    // The texts do reach every cue.
    const units = RECORDS.map((record) => corpusUnit(record, null));
    expect(units.some((unit) => unit.eventPeriod !== null)).toBe(true);
    expect(units.some((unit) => unit.isQuestion)).toBe(true);
    expect(units.some((unit) => unit.firstPerson)).toBe(true);
    expect(units.some((unit) => unit.entities.length > 1)).toBe(true);
  });

  it('uses what is stored when it matches the record, and derives again when the record changed or the stored set is not whole', () => {
    const record = RECORDS[2];
    const features = stored(record) as string;
    expect(typeof features).toBe('string');
    // The stored terms are the ones read (a marker no derivation makes proves the read path ran).
    const head = features.slice(0, 16);
    const mentions = features.slice(features.indexOf('\u001f'));
    expect(mentions.length).toBeGreaterThan(1);
    expect(corpusUnit(record, null, undefined, `${head}marker${mentions}`).terms).toEqual(['marker']);
    expect(readStoredFeatures(record, features)).not.toBeNull();
    // Every input of the derivation is in the fingerprint.
    expect(readStoredFeatures({ ...record, text: `${record.text} Really.` }, features)).toBeNull();
    expect(readStoredFeatures({ ...record, role: 'Caroline' }, features)).toBeNull();
    expect(readStoredFeatures({ ...record, tags: ['pets'] }, features)).toBeNull();
    expect(readStoredFeatures({ ...record, occurred_at: '2023-05-12T13:56:00.000Z' }, features)).toBeNull();
    // A changed record read with the old set gets its own derivation, not the stale one.
    const changed = { ...record, text: 'Caroline bought a violin in Boston.' };
    expect(corpusUnit(changed, null, undefined, features)).toEqual(corpusUnit(changed, null));
    // Sets that are not whole are ignored: another type, a short one, flags out of range, no space
    // after them, a mention of an unknown kind, with a field missing or one too many, the
    // fingerprint changed, and the object form of FEATURES_VERSION 2.
    const flagsAt = 14;
    for (const broken of [
      null,
      42,
      {},
      'x',
      features.slice(0, 15),
      `${features.slice(0, flagsAt)}9${features.slice(flagsAt + 1)}`,
      `${features.slice(0, flagsAt + 1)}_${features.slice(flagsAt + 2)}`,
      `${head}a b\u001fplanet\u001da\u001dA\u001d1`,
      `${head}a b\u001fperson\u001da\u001dA`,
      `${head}a b\u001fperson\u001da\u001dA\u001d1\u001dx`,
      `${head}a b\u001fperson\u001da\u001dA\u001dyes`,
      `0000000${features.slice(7)}`,
      { h: features.slice(0, 14), t: 'marker', f: 0 },
    ]) {
      expect(readStoredFeatures(record, broken)).toBeNull();
      expect(corpusUnit(record, null, undefined, broken)).toEqual(corpusUnit(record, null));
    }
  });

  it('fingerprints a record as every store written so far holds it (another hash would derive every stored memory again, at every load)', () => {
    const base = { id: 'm', user_id: 'u', importance: 0.5, source: 'add', created_at: '2023-05-09T12:00:00.000Z', seq: 0 };
    expect(fingerprint({ ...base, text: 'I went hiking with my sister yesterday!', role: 'Caroline', tags: [], occurred_at: '2023-05-09T13:56:00.000Z' })).toBe('1kzzt330z159ji');
    expect(fingerprint({ ...base, text: 'ok', tags: ['Outdoors', 'pets'] })).toBe('12f0mje18eovki');
    expect(fingerprint({ ...base, text: 'Ünïcode ☃ \ud83d\ude00 text', role: 'Jon', tags: [], occurred_at: 'not a date' })).toBe('0n5xlpk1gyetul');
  });

  it('reads stored mentions as their plain definition does (split by MENTION, then FIELD), whatever the bytes', () => {
    // The definition the reader's indexOf walk must match: four fields, a known kind, a 1 or a 0.
    const KINDS = new Set(['person', 'title', 'name']);
    const plain = (mentions: string): Array<{ key: string; surface: string; kind: string; confident: boolean }> | null => {
      const out = [];
      for (const mention of mentions.split('\u001e')) {
        const [kind, key, surface, confident, ...rest] = mention.split('\u001d');
        if (rest.length > 0 || !KINDS.has(kind) || key === undefined || surface === undefined || (confident !== '1' && confident !== '0')) return null;
        out.push({ key, surface, kind, confident: confident === '1' });
      }
      return out;
    };
    const record = RECORDS[0];
    const head = (withStoredFeatures(record).fx as string).split('\u001f')[0];
    const pieces = ['person', 'name', 'title', 'planet', 'a', 'Ann', '', '1', '0', '10', '\u001d', '\u001d', '\u001e', '\u001f'];
    let seed = 11;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    let read = 0;
    for (let i = 0; i < 20_000; i++) {
      let mentions = '';
      for (let n = 1 + Math.floor(next() * 9); n > 0; n--) mentions += pieces[Math.floor(next() * pieces.length)];
      if (i % 2 === 0) mentions = `person\u001d${mentions}\u001d1`;
      const expected = plain(mentions);
      const features = readStoredFeatures(record, `${head}\u001f${mentions}`);
      expect(features?.entities ?? null, JSON.stringify(mentions)).toEqual(expected);
      if (expected !== null) read++;
    }
    // The walk met both outcomes often.
    expect(read).toBeGreaterThan(500);
    expect(read).toBeLessThan(19_500);
  });

  it('stores nothing for a mention that holds one of its separators, and reads the rest back', () => {
    const record = recordOf('We met Ann\u001eMarie in Rome.', 'Tim', 40);
    const mentions = deriveFeatures(record).entities;
    if (mentions.some((mention) => /[\u001d-\u001f]/.test(mention.surface))) expect(withStoredFeatures(record).fx).toBeUndefined();
    else expect(readStoredFeatures(record, stored(record))).toEqual(deriveFeatures(record));
  });

  it('changes FEATURES_VERSION whenever the derivation gives other features', () => {
    // A digest of what the derivation makes of fixed texts. When this fails, the analyzer or a cue
    // changed its output: stored features of the old derivation must not be read any more, so bump
    // FEATURES_VERSION (src/memory/unit-features.ts) and put the new digest and version here.
    const digest = createHash('sha256').update(JSON.stringify(RECORDS.map((record) => deriveFeatures(record)))).digest('hex').slice(0, 16);
    expect({ version: FEATURES_VERSION, digest }).toEqual({ version: 3, digest: '84c0a4948ccea9a5' });
  });

});

const CONVERSATION = {
  requestId: 'r1',
  userId: 'u1',
  sessionId: 's1',
  messages: TEXTS.map(([content, role], i) => ({ role: role ?? 'user', content, timestamp: 1683554160000 + i * 60_000 })),
};
const PUPPY = { userId: 'u1', query: 'What is the name of the puppy they adopted?', limit: 5 };

describe.each(TWO_SERVICES)('stored unit features (%s)', (name, open) => {
  const jsonl = name.startsWith('JSONL');
  it('are written with each memory of a data directory, left out of every answer, dropped by an update that changes the text, and give a service that loads them the same answers', async () => {
    const [a, b] = await open();
    await a.addConversation(CONVERSATION);
    const stored = async () => (await a.store.load('u1')).units.map(({ record }) => record);
    const written = await stored();
    expect(written).toHaveLength(TEXTS.length);
    // Both stores keep them: a JSONL line as its `fx`, PostgreSQL in memory_features (migration 9).
    for (const record of written) expect(readStoredFeatures(record, record.fx)).not.toBeNull();

    const hits = await a.search(PUPPY);
    expect(hits[0].memory.text).toContain('Oscar');
    for (const hit of hits) expect(hit.memory).not.toHaveProperty('fx');
    expect(await a.get('u1', hits[0].memory.id)).not.toHaveProperty('fx');
    expect((await a.list({ userId: 'u1', limit: 20 })).every((memory) => !('fx' in memory))).toBe(true);

    const updated = await a.updateMemory({ userId: 'u1', id: hits[0].memory.id, text: 'We adopted a kitten named Luna last month.' });
    expect(updated).not.toHaveProperty('fx');
    // The JSONL store writes the new version without them; PostgreSQL moves them with the memory,
    // where their fingerprint no longer matches the new text. Either way a load derives them.
    const rewritten = (await stored()).find((record) => record.id === updated.id)!;
    expect(readStoredFeatures(rewritten, rewritten.fx)).toBeNull();
    if (jsonl) expect(rewritten.fx).toBeUndefined();

    // b loads the user from the store: the stored features, and the updated memory's derived.
    const ranked = (answer: Awaited<ReturnType<typeof a.search>>) => answer.map((hit) => [hit.memory.id, hit.score]);
    const fromA = ranked(await a.search(PUPPY));
    expect(ranked(await b.search(PUPPY))).toEqual(fromA);
    await a.close();
    await b.close();
  });
});

describe('stored unit features in a data directory', () => {
  it('are what a load reads: a marker put in a line\'s stored entities is found by the entity filter', async () => {
    const dataDir = await tempDir();
    const writer = await openService({ dataDir });
    await writer.addConversation(CONVERSATION);
    await writer.close();
    const users = path.join(dataDir, 'users');
    const [folder] = await readdir(users);
    const file = path.join(users, folder, 'memories.jsonl');
    const lines = (await readFile(file, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as StoredRecord & { fx: string });
    // The line's mentions replaced by one the text does not hold.
    const fx = lines[8].fx;
    lines[8].fx = `${fx.includes('\u001f') ? fx.slice(0, fx.indexOf('\u001f')) : fx}\u001fperson\u001dzebulon\u001dZebulon\u001d1`;
    await writeFile(file, lines.map((line) => JSON.stringify(line)).join('\n') + '\n');

    const reader = await openService({ dataDir });
    const found = await reader.list({ userId: 'u1', limit: 10, filter: { entity: 'Zebulon' } });
    expect(found.map((memory) => memory.text)).toEqual([TEXTS[8][0]]);
    await reader.close();
  });
});
