import { describe, expect, it } from 'vitest';
import { countLines, stringEnd, vecMember, withoutMember } from '../../../src/store/jsonl/line-scanner.js';

const line = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');

describe('vecMember and withoutMember', () => {
  it('find the record\'s own vec member, and the line without it parses to the record without it', () => {
    const bytes = line({ id: 'a', text: 'x ,"vec":" y', metadata: { vec: 'nested' }, vec: 'AAAAgD8=', model: 'm' });
    const member = vecMember(bytes, 0, bytes.length)!;
    expect(bytes.toString('latin1', member.value, member.close)).toBe('AAAAgD8=');
    expect(JSON.parse(withoutMember(bytes, 0, bytes.length, member))).toEqual({ id: 'a', text: 'x ,"vec":" y', metadata: { vec: 'nested' }, model: 'm' });
  });

  it('find it last, where a line is written, and anywhere else at the top level, never a nested one', () => {
    const vec = 'AAAAgD8=';
    const record = { id: 'a', text: 'x ,"vec":" y', metadata: { vec: 'nested', other: { vec: 'deeper' } } };
    // Last (the writer's place), second, between: the same member and the same rest.
    for (const value of [{ ...record, vec }, { id: 'a', vec, ...record }, { id: 'a', text: record.text, vec, metadata: record.metadata }]) {
      const bytes = line(value);
      const member = vecMember(bytes, 0, bytes.length)!;
      expect(bytes.toString('latin1', member.value, member.close), JSON.stringify(value)).toBe(vec);
      expect(JSON.parse(withoutMember(bytes, 0, bytes.length, member))).toEqual(record);
    }
    // A nested one whose string closes right before the line's end is not the record's own.
    for (const value of [{ id: 'a', metadata: { vec } }, { id: 'a', metadata: { a: { vec } } }, { id: 'a', tags: [{ vec }] }]) {
      const bytes = line(value);
      expect(vecMember(bytes, 0, bytes.length), JSON.stringify(value)).toBeNull();
    }
  });

  it('find none in a record without one, whatever its text and metadata spell', () => {
    for (const value of [{ id: 'a' }, { id: 'a', metadata: { vec: 'AAAA' } }, { id: 'a', text: ',"vec":"AAAA"' }, { id: 'a', tags: [{ vec: 'x' }] }]) {
      const bytes = line(value);
      expect(vecMember(bytes, 0, bytes.length), JSON.stringify(value)).toBeNull();
    }
  });

  it('look only inside the line given', () => {
    const bytes = Buffer.concat([line({ id: 'a' }), Buffer.from('\n'), line({ id: 'b', vec: 'AAAA' })]);
    const newline = bytes.indexOf(10);
    expect(vecMember(bytes, 0, newline)).toBeNull();
    expect(vecMember(bytes, newline + 1, bytes.length)).not.toBeNull();
  });
});

describe('stringEnd', () => {
  it('finds the closing quote past escaped ones, or gives the end', () => {
    const bytes = Buffer.from('ab\\"c"rest', 'latin1');
    expect(stringEnd(bytes, 0, bytes.length)).toBe(5);
    expect(stringEnd(bytes, 0, 4)).toBe(4);
  });
});

describe('countLines', () => {
  it('counts the non-empty lines that end in a newline', () => {
    expect(countLines(Buffer.from('a\n\nb\n  \nc'))).toBe(3);
    expect(countLines(Buffer.alloc(0))).toBe(0);
  });

  it('stops at the count asked for', () => {
    expect(countLines(Buffer.from('a\nb\nc\nd\n'), 2)).toBe(2);
    expect(countLines(Buffer.from('a\n\nb\n'), 5)).toBe(2);
  });
});
