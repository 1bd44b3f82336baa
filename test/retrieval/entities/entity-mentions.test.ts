import { describe, expect, it } from 'vitest';
import { entityKey, entityMentions } from '../../../src/retrieval/entities/entity-mentions.js';

const keys = (text: string, speaker?: string) => entityMentions(text, speaker).map((mention) => `${mention.key}${mention.confident ? '' : '?'}:${mention.kind}`).sort();

describe('entityMentions', () => {
  it('finds capitalised names inside a sentence, and marks those opening one as unsure', () => {
    expect(keys('Wow, that is cool, Caroline! Melanie went to Boston.')).toEqual(['boston:name', 'caroline:name', 'melanie?:name']);
  });

  it('never takes the pronoun, months, weekdays, greetings or function words for names', () => {
    expect(keys('Hey Mel! I saw it on Monday in May. Thanks, I guess. OK then, Wow')).toEqual(['mel:name']);
  });

  it('joins runs of capitalised words, with links such as "of", and keeps each word too', () => {
    expect(keys('We went to New York with the Bank of America team.')).toEqual(['america:name', 'bank of america:name', 'bank:name', 'new york:name', 'new:name', 'york:name']);
  });

  it('ends a name at punctuation and at a possessive, which it drops', () => {
    expect(keys("I met Caroline, Melanie and John's dog.")).toEqual(['caroline:name', 'john:name', 'melanie:name']);
    expect(entityKey('Caroline’s')).toBe('caroline');
  });

  it('reads a quoted capitalised title as one, and the speaker as a person (not a generic role)', () => {
    expect(keys('I loved reading "Charlotte\'s Web" as a kid', 'Melanie')).toContain('charlotte\'s web:title');
    expect(keys('I loved it', 'Melanie')).toEqual(['melanie:person']);
    expect(keys('I loved it', 'user')).toEqual([]);
    expect(keys('“the lowercase one” stays out')).toEqual([]);
  });

  it('keeps each key once, its most telling mention', () => {
    expect(keys('Melanie is here. Where is Melanie?')).toEqual(['melanie:name']);
    expect(keys('Hi Melanie', 'Melanie')).toEqual(['melanie:person']);
  });

  it('takes acronyms and names after line breaks and quotes as such', () => {
    expect(keys('I went to a LGBTQ support group\nCaroline came too')).toEqual(['caroline?:name', 'lgbtq:name']);
  });
});
