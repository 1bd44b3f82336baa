import { describe, expect, it } from 'vitest';
import { addressedRole, asksAboutPerson, isDistractorQuestion, namedSpeaker, speaksOfSelf } from '../../src/retrieval/query-cues.js';

describe('namedSpeaker', () => {
  const speakers = ['caroline', 'melanie', 'user'];

  it('finds the one known speaker a query names, by full or first name, possessive too', () => {
    expect(namedSpeaker('What did Caroline research?', speakers)).toBe('caroline');
    expect(namedSpeaker("What is Melanie's favourite book?", speakers)).toBe('melanie');
    expect(namedSpeaker('When did Jon Smith move?', ['jon smith', 'gina'])).toBe('jon smith');
  });

  it('is null when no speaker or several are named, and never picks a generic role', () => {
    expect(namedSpeaker('What do Caroline and Melanie both like?', speakers)).toBeNull();
    expect(namedSpeaker('What is the weather?', speakers)).toBeNull();
    expect(namedSpeaker('What did the user say?', speakers)).toBeNull();
  });
});

describe('addressedRole', () => {
  const roles = ['user', 'assistant'];

  it('sends first-person questions to the user\'s turns', () => {
    expect(addressedRole('What did I buy for my sister?', roles)).toBe('user');
    expect(addressedRole("How many days ago did I meet Emma?", roles)).toBe('user');
    expect(addressedRole("I'm anxious about Tokyo, any tips?", roles)).toBe('user');
  });

  it('sends "what did you recommend" questions to the assistant\'s turns', () => {
    expect(addressedRole('Can you remind me which hotel you recommended?', roles)).toBe('assistant');
    expect(addressedRole('What was the third tip you gave me?', roles)).toBe('assistant');
  });

  it('is null without such roles in the history, or without a cue', () => {
    expect(addressedRole('What did I buy?', ['caroline', 'melanie'])).toBeNull();
    expect(addressedRole('Where is the Eiffel tower?', roles)).toBeNull();
    expect(addressedRole('What did I buy?', ['human', 'ai'])).toBe('human');
  });
});

describe('isDistractorQuestion', () => {
  it('is a question turn between named speakers only', () => {
    expect(isDistractorQuestion('That is lovely! What other hobbies have you found?', 'melanie')).toBe(true);
    expect(isDistractorQuestion('Did you go? ', 'caroline')).toBe(true);
    expect(isDistractorQuestion('Is it "Charlotte\'s Web?"', 'caroline')).toBe(true);
    expect(isDistractorQuestion('I went to the park? No, the beach.', 'caroline')).toBe(false);
    expect(isDistractorQuestion('What should I buy for my sister?', 'user')).toBe(false);
    expect(isDistractorQuestion('Any questions?', null)).toBe(false);
  });

  it('is not a question turn that first says when something happened', () => {
    expect(isDistractorQuestion("I got mentored by a business coach yesterday! What's been up with you?", 'jon')).toBe(false);
    expect(isDistractorQuestion('We moved last month. Have you been busy?', 'gina')).toBe(false);
    expect(isDistractorQuestion('Have you been busy? I have.', 'gina')).toBe(false);
    expect(isDistractorQuestion('Great photo! Have you been busy?', 'gina')).toBe(true);
  });
});

describe('asksAboutPerson', () => {
  it('holds for inferences and for lists of things of a kind', () => {
    expect(asksAboutPerson('Would Melanie be more interested in going to a national park or a theme park?')).toBe(true);
    expect(asksAboutPerson("What might John's financial status be?")).toBe(true);
    expect(asksAboutPerson('Is it likely that Nate has friends besides Joanna?')).toBe(true);
    expect(asksAboutPerson("Based on Tim's collections, what is a shop that he would enjoy?")).toBe(true);
    expect(asksAboutPerson('What activities has Melanie done with her family?')).toBe(true);
    expect(asksAboutPerson('What LGBTQ+ events has Caroline participated in?')).toBe(false); // "+" is no letter
    expect(asksAboutPerson('What instruments does Melanie play?')).toBe(true);
    expect(asksAboutPerson('What kinds of books does Tim read?')).toBe(true);
    expect(asksAboutPerson('What kinds of art does Caroline make?')).toBe(false); // the thing asked for must be plural
    expect(asksAboutPerson('Which books has Tim read?')).toBe(true);
  });

  it('does not hold for a question about one event or fact', () => {
    expect(asksAboutPerson('When did Caroline go to the LGBTQ support group?')).toBe(false);
    expect(asksAboutPerson('What did Melanie paint recently?')).toBe(false);
    expect(asksAboutPerson("What is Caroline's relationship status?")).toBe(false);
    expect(asksAboutPerson('Where did Caroline move from 4 years ago?')).toBe(false);
    expect(asksAboutPerson('What does Melanie do to destress?')).toBe(false);
  });
});

describe('speaksOfSelf', () => {
  it('finds a speaker speaking of themself, singular or plural', () => {
    expect(speaksOfSelf('I just signed up for a pottery class yesterday.')).toBe(true);
    expect(speaksOfSelf("We went camping with the kids. It's been great!")).toBe(true);
    expect(speaksOfSelf("I'm off to go swimming.")).toBe(true);
    expect(speaksOfSelf('Our trip got off to a bad start.')).toBe(true);
  });

  it('not a turn about the other person or the world', () => {
    expect(speaksOfSelf("Wow, that's amazing! You really care about being real.")).toBe(false);
    expect(speaksOfSelf('The game was called Counter-Strike.')).toBe(false);
    // Words holding "i" or "us" are not the pronouns.
    expect(speaksOfSelf('Music is inspiring, a mix of business and bonus tracks.')).toBe(false);
  });
});
