import { describe, expect, it } from 'vitest';
import { decodeBody, JsonSyntaxError, parseJson } from '../../src/http/json-body.js';
import { writtenAsNonInteger } from '../../src/protocol/number-literals.js';

describe('parseJson', () => {
  it('reads strings as JSON.parse does: escapes, unicode escapes, surrogate pairs, long runs', () => {
    const samples = [
      '"plain"',
      '"a\\"b\\\\c\\/d\\b\\f\\n\\r\\t"',
      '"\\u00e9t\\u00E9 \\ud83d\\ude00"',
      '"😀 שלום 漢字"',
      '""',
      JSON.stringify('x'.repeat(100_000) + '"' + 'y'.repeat(10) + '\\' + '\n'),
      '{"a":["b","c\\n",{"d":"e"}],"f":"g"}',
    ];
    for (const sample of samples) expect(parseJson(sample)).toEqual(JSON.parse(sample));
  });

  it.each([
    ['"unterminated', /Unterminated string at position 13/],
    ['"raw\u0001control"', /Unescaped control character in string at position 4/],
    ['"bad \\x escape"', /Invalid escape at position 5/],
    ['"bad \\u12G4"', /Invalid unicode escape/],
    ['"ends in backslash\\', /Invalid escape/],
  ])('%j is a syntax error naming the place', (text, message) => {
    expect(() => parseJson(text)).toThrow(JsonSyntaxError);
    expect(() => parseJson(text)).toThrow(message);
  });

  it('reads literals past the double range as the largest finite number, keeping how they were written', () => {
    const huge = `1${'0'.repeat(400)}`;
    const body = parseJson(`{"a":${huge},"b":-${huge},"c":${huge}.5,"d":1e400,"e":5}`) as Record<string, number>;
    expect(body).toEqual({ a: Number.MAX_VALUE, b: -Number.MAX_VALUE, c: Number.MAX_VALUE, d: Number.MAX_VALUE, e: 5 });
    expect(['a', 'b', 'c', 'd', 'e'].map((key) => writtenAsNonInteger(body, key))).toEqual([false, false, true, true, false]);
  });
});

describe('decodeBody', () => {
  it('reads ASCII and UTF-8 bodies alike, and refuses bytes that are not UTF-8', () => {
    for (const text of ['{"a":"plain ascii \\u00e9"}', '{"a":"été 😀 שלום"}', '', '\u007f\u0000']) {
      expect(decodeBody(Buffer.from(text, 'utf8'))).toBe(text);
    }
    expect(() => decodeBody(Buffer.from([0x7b, 0xff, 0x7d]))).toThrow();
    expect(() => decodeBody(Buffer.from([0x22, 0xc3]))).toThrow();
  });
});
