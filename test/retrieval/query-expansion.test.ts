import { describe, expect, it } from 'vitest';
import { analyze } from '../../src/retrieval/analyzer.js';
import { wordNet } from '../../src/retrieval/lexicon/wordnet.js';
import { expandQuery, relatedWords } from '../../src/retrieval/query-expansion.js';

const on = { expansionWeight: 0.2, hypernymWeight: 0.1 };
const plan = (text: string, weights = on) => expandQuery(text, { terms: analyze(text) }, wordNet(), weights);

describe('relatedWords', () => {
  it('gives the first sense’s synonyms and derivations, and its direct hypernyms apart', () => {
    const pottery = relatedWords(wordNet(), 'pottery');
    expect(pottery.close).toContain('clayware');
    const dog = relatedWords(wordNet(), 'dog');
    expect(dog.hypernyms).toContain('canine');
    expect(dog.close).not.toContain('dog');
    expect([...dog.close, ...dog.hypernyms].every((word) => !word.includes(' '))).toBe(true);
  });
});

describe('expandQuery', () => {
  it("keeps the query's own terms first at weight 1 and adds new terms at the lower weights", () => {
    const expanded = plan('What pottery has she made?');
    const own = analyze('What pottery has she made?');
    expect(expanded.terms.slice(0, own.length)).toEqual(own);
    expect(expanded.termWeights!.slice(0, own.length).every((w) => w === 1)).toBe(true);
    const clayware = expanded.terms.indexOf(analyze('clayware')[0]!);
    expect(expanded.termWeights![clayware]).toBe(0.2);
    expect(new Set(expanded.terms).size).toBe(expanded.terms.length);
    const puppy = plan('Does he have a puppy?');
    expect(puppy.termWeights![puppy.terms.indexOf(analyze('dog')[0]!)]).toBe(0.1);
  });

  it('changes nothing with both weights at 0, and leaves names, short words and stop words alone', () => {
    const own = { terms: analyze('What pottery has Rose made?') };
    expect(expandQuery('What pottery has Rose made?', own, wordNet(), { expansionWeight: 0, hypernymWeight: 0 })).toBe(own);
    expect(plan('Ask Rose and Max')).toEqual({ terms: analyze('Ask Rose and Max') });
    expect(plan('Is it art?').terms).toEqual(analyze('Is it art?'));
  });
});
