import { describe, expect, it } from 'vitest';
import { EntityIndex } from '../../../src/retrieval/entities/entity-index.js';
import { entityMentions } from '../../../src/retrieval/entities/entity-mentions.js';

function indexOf(texts: Array<[number, string, string?]>): EntityIndex {
  const index = new EntityIndex();
  for (const [seq, text, speaker] of texts) index.add(seq, entityMentions(text, speaker));
  return index;
}

describe('EntityIndex', () => {
  it('knows a name from one confident mention, and then counts its sentence-start mentions too', () => {
    const index = indexOf([
      [1, 'Melanie painted a sunrise.'],
      [2, 'I met Melanie at the lake.'],
      [3, 'Yesterday was long.'],
    ]);
    expect([...index.get('melanie')!.seqs].sort()).toEqual([1, 2]);
    expect(index.count('melanie')).toBe(2);
    // Only ever a sentence's first word: no entity.
    expect(index.knows('yesterday')).toBe(false);
    expect(index.get('yesterday')).toBeNull();
  });

  it('forgets a unit on remove, and an entity with its last confident mention', () => {
    const mentions = [entityMentions('Melanie painted.'), entityMentions('I met Melanie.')];
    const index = new EntityIndex();
    mentions.forEach((m, seq) => index.add(seq, m));
    index.remove(1, mentions[1]);
    // The sentence-start mention alone no longer makes it an entity.
    expect(index.knows('melanie')).toBe(false);
    index.remove(0, mentions[0]);
    expect([...index.known()]).toEqual([]);
  });

  it('gives the kind person for a speaker, then title, then name', () => {
    const index = indexOf([
      [1, 'I read "Becoming Nicole" and met Nicole.'],
      [2, 'Hi there', 'Caroline'],
      [3, 'Caroline is great, I told Nicole.'],
    ]);
    const kinds = Object.fromEntries([...index.known()].map((entry) => [entry.key, [entry.kind, entry.seqs.size]]));
    expect(kinds).toEqual({ 'becoming nicole': ['title', 1], nicole: ['name', 2], caroline: ['person', 2] });
  });
});

describe('EntityIndex with the words of its units', () => {
  it('knows a sentence-start name no unit writes in lowercase, not a word some unit does', () => {
    const lowercase = new Map([['caroline', 1], ['painting', 3]]);
    const index = new EntityIndex((word) => lowercase.get(word) ?? Infinity);
    index.add(1, entityMentions('Caroline adopted a dog.'));
    index.add(2, entityMentions('Painting is my thing.'));
    expect(index.knows('caroline')).toBe(true);
    expect(index.get('caroline')!.kind).toBe('name');
    expect(index.knows('painting')).toBe(false);
  });
});
