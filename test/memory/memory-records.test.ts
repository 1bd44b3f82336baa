import { describe, expect, it } from 'vitest';
import { corpusUnit } from '../../src/memory/corpus-units.js';
import { duplicateKey, instantMs } from '../../src/memory/memory-records.js';
import { eventPeriod } from '../../src/retrieval/time-cues/named-period.js';
import { hasTimeExpression } from '../../src/retrieval/time-cues/time-expression.js';
import type { StoredRecord } from '../../src/store/stored-record.js';

function record(text: string, occurredAt: string | undefined, seq = 0): StoredRecord {
  return {
    id: `m${seq}`,
    user_id: 'u',
    text,
    tags: [],
    importance: 0.5,
    source: 'add',
    created_at: '2023-05-09T10:00:00.000Z',
    ...(occurredAt === undefined ? {} : { occurred_at: occurredAt }),
    role: 'Caroline',
    seq,
  };
}

/** The key as it was defined before its fast path: trimmed, every run of white space one space, lowercased. */
const collapsed = (text: string): string => text.trim().replace(/\s+/g, ' ').toLowerCase();

describe('duplicateKey', () => {
  it('trims, collapses every kind of white space and lowercases, as the plain definition does', () => {
    const samples = ['', ' ', 'Hello World', ' a', 'a ', 'a  b', 'a\tb', 'a\nb', 'x\u00a0y', 'x\u3000y', '\ufeffx', 'x\u2028', 'A B C  ', 'a b\r\n', 'Ünïcode Téxt'];
    for (const text of samples) expect(duplicateKey(text), JSON.stringify(text)).toBe(collapsed(text));
    expect(duplicateKey('  I went   Hiking\n')).toBe('i went hiking');
  });

  it('agrees with the plain definition on random strings of spaces, other white space and letters', () => {
    const chars = [' ', ' ', '\t', '\n', '\r', 'a', 'B', '\u00a0', '\u3000', '\ufeff', 'é'];
    let seed = 7;
    const next = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    for (let i = 0; i < 20_000; i++) {
      let text = '';
      for (let n = Math.floor(next() * 8); n > 0; n--) text += chars[Math.floor(next() * chars.length)];
      expect(duplicateKey(text), JSON.stringify(text)).toBe(collapsed(text));
    }
  });
});

describe('instantMs', () => {
  it('is Date.parse of each value in turn, a repeated one included', () => {
    const values = ['2023-05-09T10:00:00.000Z', '2023-05-09T10:00:00.000Z', '2024-02-29T23:59:59.999Z', 'not a date', '2023-05-09T10:00:00.000Z', '', '2023-05-09T10:00:00.000+02:00', '2023-05-09T10:00:00.000+02:00'];
    for (const value of values) expect(instantMs(value), value).toBe(Date.parse(value));
  });

  it('remembers no local time: one read again after TZ changes is parsed in the new zone', () => {
    const zone = process.env.TZ;
    try {
      process.env.TZ = 'UTC';
      const local = '2023-05-09T10:00:00';
      expect(instantMs(local)).toBe(Date.parse(local));
      process.env.TZ = 'Asia/Tokyo';
      expect(instantMs(local)).toBe(Date.parse(local));
      expect(instantMs(local)).toBe(Date.UTC(2023, 4, 9, 1));
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });
});

describe('corpusUnit', () => {
  it("resolves a unit's event period, when read, as eventPeriod() does against the unit's date", () => {
    const texts = [
      'I went hiking yesterday with my kids.',
      'We adopted a dog last month!',
      'The concert was on 8 May 2023, amazing.',
      'I love painting sunsets.',
      'Next week I start my new job.',
      'Back in 2019 I moved here.',
    ];
    let seq = 0;
    for (const text of texts) {
      for (const occurredAt of ['2023-05-09T10:00:00.000Z', undefined]) {
        const stored = record(text, occurredAt, seq++);
        const unit = corpusUnit(stored, null);
        const spokenAt = Date.parse(occurredAt ?? stored.created_at);
        const expected = eventPeriod(text, spokenAt);
        expect(unit.hasTimeExpression).toBe(hasTimeExpression(text));
        expect(unit.eventPeriod, text).toEqual(expected);
        // Read again: the same answer (it is resolved once).
        expect(unit.eventPeriod).toEqual(expected);
      }
    }
    expect(corpusUnit(record('I went hiking yesterday.', '2023-05-09T10:00:00.000Z'), null).eventPeriod).toEqual({
      startMs: Date.parse('2023-05-08T00:00:00.000Z'),
      endMs: Date.parse('2023-05-09T00:00:00.000Z'),
    });
  });

  it('has no event period for a text without a time expression or a unit without a valid date', () => {
    expect(corpusUnit(record('I love painting sunsets.', '2023-05-09T10:00:00.000Z'), null).eventPeriod).toBeNull();
    expect(corpusUnit({ ...record('I went hiking yesterday.', 'not a date'), created_at: 'not a date either' }, null).eventPeriod).toBeNull();
  });
});
