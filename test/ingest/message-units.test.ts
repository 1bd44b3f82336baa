import { describe, expect, it } from 'vitest';
import { countWords, denseText, lexicalText, MAX_UNIT_WORDS, splitIntoUnits, standaloneContent } from '../../src/ingest/message-units.js';

const words = (n: number, word = 'word') => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ');
/** 8 May 2023, 13:56 UTC. */
const MAY_8 = Date.UTC(2023, 4, 8, 13, 56);

describe('countWords', () => {
  it('counts runs of non-space, whatever the white space between them', () => {
    expect(countWords('')).toBe(0);
    expect(countWords('   \n\t ')).toBe(0);
    expect(countWords(' I went\thiking,\n yesterday. ')).toBe(4);
  });
});

describe('splitIntoUnits', () => {
  it('keeps a message of at most the limit whole (trimmed), and stores nothing for a blank one', () => {
    expect(splitIntoUnits('   ')).toEqual([]);
    const atLimit = words(MAX_UNIT_WORDS);
    expect(splitIntoUnits(`  ${atLimit}\n`)).toEqual([atLimit]);
  });

  it('packs whole sentences into units of at most the limit, in order, losing no word', () => {
    const sentences = Array.from({ length: 6 }, (_, i) => `Sentence ${i} ${words(8, `s${i}w`)}.`);
    const units = splitIntoUnits(sentences.join(' '), 25);
    // Each sentence is 10 words: two fit under 25, a third would not.
    expect(units).toEqual([sentences.slice(0, 2).join(' '), sentences.slice(2, 4).join(' '), sentences.slice(4, 6).join(' ')]);
    for (const unit of units) expect(countWords(unit)).toBeLessThanOrEqual(25);
  });

  it('cuts a sentence longer than the limit into runs of exactly the limit, after the sentences before it', () => {
    const short = 'I adopted a dog.';
    const long = `${words(23, 'x')}.`;
    const units = splitIntoUnits(`${short} ${long}`, 10);
    expect(units).toEqual([short, words(10, 'x'), words(20, 'x').split(' ').slice(10).join(' '), 'x20 x21 x22.']);
    expect(units.slice(1).join(' ')).toBe(long);
  });

  it('keeps the default limit under the encoder window of 128 tokens at ~1.5 pieces a word', () => {
    expect(MAX_UNIT_WORDS * 1.5).toBeLessThan(128);
    const units = splitIntoUnits(words(MAX_UNIT_WORDS * 2 + 1));
    expect(units.map(countWords)).toEqual([MAX_UNIT_WORDS, MAX_UNIT_WORDS, 1]);
  });
});

describe('the texts of a unit', () => {
  const unit = { text: 'I went to a support group.', role: 'Caroline', timeMs: MAY_8, tags: ['health', 'lgbtq'] };
  const bare = { text: 'Buy milk', timeMs: MAY_8 };

  it('the encoder reads the speaker, then the text, and neither date nor tags', () => {
    expect(denseText(unit)).toBe('Caroline: I went to a support group.');
    expect(denseText(bare)).toBe('Buy milk');
  });

  it('BM25 reads the readable date, the speaker, the text and the tags', () => {
    expect(lexicalText(unit)).toBe('8 May 2023 Caroline: I went to a support group. health lgbtq');
    expect(lexicalText({ ...bare, tags: [] })).toBe('8 May 2023 Buy milk');
  });

  it('the answering model reads the UTC minute in brackets, the speaker and the text', () => {
    expect(standaloneContent(unit)).toBe('[2023-05-08 13:56] Caroline: I went to a support group.');
    expect(standaloneContent(bare)).toBe('[2023-05-08 13:56] Buy milk');
  });
});
