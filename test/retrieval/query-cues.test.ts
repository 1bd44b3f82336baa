import { describe, expect, it } from 'vitest';
import { addressedRole, isDistractorQuestion, namedSpeaker } from '../../src/retrieval/query-cues.js';

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
