/**
 * A `memories.jsonl` as the MemoryPool tool writes it (no user, no vectors), holding good lines,
 * malformed ones of each kind the protocol's rules refuse, a blank line and a duplicate id.
 */

export const LEGACY_GOOD = [
  { id: 'mem-dog', text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.9, source: 'chat', created_at: '2024-03-01T10:00:00.000Z' },
  // Optional fields left out: the protocol's defaults apply.
  { id: 'mem-wifi', text: 'The wifi password is hunter2' },
  { id: 'mem-paint', text: 'Melanie paints sunsets by the lake', tags: ['art', 'hobby'], importance: 0.3, source: 'memorypool', created_at: '2023-07-15T08:30:00Z' },
] as const;

/** Line numbers (from 1) of the lines that must be skipped as malformed, and of the duplicate. */
export const LEGACY_MALFORMED_LINES = [2, 5, 7, 9, 10, 11];
export const LEGACY_DUPLICATE_LINE = 6;

export function legacyFileText(): string {
  const lines = [
    JSON.stringify(LEGACY_GOOD[0]),
    '{"id": "mem-torn", "text": "half a li',
    '',
    JSON.stringify(LEGACY_GOOD[1]),
    JSON.stringify({ id: 'mem-loud', text: 'importance out of range', importance: 7 }),
    JSON.stringify({ id: 'mem-dog', text: 'Another text reusing the first id' }),
    JSON.stringify({ id: 'mem-blank', text: '   ' }),
    JSON.stringify(LEGACY_GOOD[2]),
    JSON.stringify({ id: 'mem-tags', text: 'tags that are not strings', tags: [1, 2] }),
    JSON.stringify({ id: 'mem-when', text: 'a date that is not one', created_at: 'last tuesday-ish' }),
    JSON.stringify({ text: 'no id at all' }),
  ];
  return lines.join('\n') + '\n';
}
