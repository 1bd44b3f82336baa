import { describe, expect, it } from 'vitest';
import { fileLines, readMemoryLines } from '../../src/protocol/memory-file.js';
import { LEGACY_DUPLICATE_LINE, LEGACY_MALFORMED_LINES, legacyFileText } from '../support/memorypool-file.js';

describe('readMemoryLines', () => {
  it('keeps the good lines of a MemoryPool memories file, with the protocol defaults, and names every line it skips', async () => {
    const now = new Date('2025-01-02T03:04:05.000Z');
    const content = await readMemoryLines(fileLines(Buffer.from(legacyFileText())), { now });
    expect(content.records).toEqual([
      { id: 'mem-dog', user_id: 'default', text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.9, source: 'chat', created_at: '2024-03-01T10:00:00.000Z' },
      { id: 'mem-wifi', user_id: 'default', text: 'The wifi password is hunter2', tags: [], importance: 0.5, source: 'cli', created_at: now.toISOString() },
      // The same instant, in the service's spelling.
      { id: 'mem-paint', user_id: 'default', text: 'Melanie paints sunsets by the lake', tags: ['art', 'hobby'], importance: 0.3, source: 'memorypool', created_at: '2023-07-15T08:30:00.000Z' },
    ]);
    expect(content.malformed.map(({ line }) => line)).toEqual(LEGACY_MALFORMED_LINES);
    expect(content.malformed.map(({ reason }) => reason)).toEqual([
      'not valid JSON',
      'importance must be between 0 and 1',
      'text must not be empty',
      'tags.0: tags must be an array of strings',
      'created_at must be a valid date',
      'id is required',
    ]);
    expect(content.duplicates).toEqual([{ line: LEGACY_DUPLICATE_LINE, reason: 'id "mem-dog" already on line 1' }]);
  });

  it('gives the lines that name no user to the user asked for, and keeps a named user (an export) as it is', async () => {
    const lines = [JSON.stringify({ id: 'a', text: 'no user named' }), JSON.stringify({ id: 'a', user_id: 'ben', text: 'same id, another user', created_at: '2024-01-01T00:00:00.000Z' })];
    const content = await readMemoryLines(lines, { userId: 'ana' });
    expect(content.records.map(({ user_id, id }) => [user_id, id])).toEqual([['ana', 'a'], ['ben', 'a']]);
    expect(content.duplicates).toEqual([]);
  });

  it('skips, naming why, a line that is not valid Unicode or whose vector is not whole float32s, and keeps a line in its own field order', async () => {
    const lines = [
      JSON.stringify({ text: 'NUL \u0000 is fine', id: 'a', metadata: { k: 'v' }, user_id: 'ana' }),
      JSON.stringify({ id: 'b', text: 'lone \ud800' }),
      JSON.stringify({ id: 'c', text: 'x', metadata: { ['k\udc00']: 1 } }),
      JSON.stringify({ id: 'd', text: 'x', vec: 'abc', model: 'm' }),
    ];
    const content = await readMemoryLines(lines, { now: new Date('2025-01-01T00:00:00.000Z') });
    expect(content.records.map((record) => Object.keys(record))).toEqual([['text', 'id', 'metadata', 'user_id', 'tags', 'importance', 'source', 'created_at']]);
    expect(content.records[0].text).toBe('NUL \u0000 is fine');
    expect(content.malformed).toEqual([
      { line: 2, reason: 'text: must be valid Unicode text: a lone surrogate at character 5' },
      { line: 3, reason: 'metadata.k\udc00: must be valid Unicode text: a lone surrogate at character 1' },
      { line: 4, reason: 'vec: must be base64 of float32 values' },
    ]);
  });
});
