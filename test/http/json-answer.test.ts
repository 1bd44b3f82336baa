import { describe, expect, it } from 'vitest';
import { BYTES_FROM_LENGTH, serializeAnswer } from '../../src/http/json-answer.js';
import { build } from '../support/helper.js';

describe('serializeAnswer', () => {
  it('keeps a small answer a string and encodes a large one as UTF-8 bytes of the same JSON', () => {
    const small = { text: 'été 😀', n: 1 };
    expect(serializeAnswer(small)).toBe(JSON.stringify(small));
    const large = { items: Array.from({ length: 3 }, (_, i) => `${i} é 😀 ${'x'.repeat(BYTES_FROM_LENGTH / 2)}`) };
    const bytes = serializeAnswer(large);
    expect(Buffer.isBuffer(bytes)).toBe(true);
    expect((bytes as Buffer).toString('utf8')).toBe(JSON.stringify(large));
    expect((bytes as Buffer).length).toBe(Buffer.byteLength(JSON.stringify(large)));
  });
});

describe('a large answer through the app', () => {
  it('arrives whole, as JSON, with its byte length (non-ASCII text included)', async () => {
    const { app } = await build();
    // Six memories of 190,000 characters, a third of them two bytes in UTF-8: over 1 MiB of JSON.
    const texts = Array.from({ length: 6 }, (_, i) => `memory ${i} ${'é, a café; '.repeat(17_270)}end`);
    for (const text of texts) expect((await app.inject({ method: 'POST', url: '/mem', payload: { text } })).statusCode).toBe(201);
    const answer = await app.inject({ method: 'GET', url: '/mem/list?limit=10' });
    expect(answer.statusCode).toBe(200);
    expect(answer.headers['content-type']).toMatch(/^application\/json/);
    expect(answer.rawPayload.length).toBeGreaterThan(BYTES_FROM_LENGTH);
    expect(Number(answer.headers['content-length'])).toBe(answer.rawPayload.length);
    expect(answer.json().map((memory: { text: string }) => memory.text)).toEqual([...texts].reverse());
  });
});
