import { describe, expect, it } from 'vitest';
import type { BenchUser } from '../../eval/benchmark.js';
import { ContentMatcher } from '../../eval/content-matcher.js';

const may8 = Date.UTC(2023, 4, 8, 13, 56);
const june9 = Date.UTC(2023, 5, 9, 19, 55);

const user: BenchUser = {
  userId: 'conv',
  sessions: [
    {
      sessionId: 'session_1',
      sessionKey: 'session_1',
      turns: [
        { turnId: 'D1:1', role: 'Caroline', content: 'Thanks!', timestamp: may8 },
        { turnId: 'D1:2', role: 'Melanie', content: 'I went to the LGBTQ support group yesterday.  It was   powerful.', timestamp: may8 },
        { turnId: 'D1:3', role: 'Caroline', content: 'Note: bring the \u201cpainting\u201d tomorrow', timestamp: may8 },
      ],
    },
    {
      sessionId: 'session_2',
      sessionKey: 'session_2',
      turns: [
        { turnId: 'D2:1', role: 'Caroline', content: 'Thanks!', timestamp: june9 },
        { turnId: 'D2:2', role: 'Melanie', content: 'Thanks!', timestamp: june9 },
        { turnId: 'D2:3', role: 'Melanie', content: 'We camped by the lake and watched the meteor shower all night long.', timestamp: june9 },
      ],
    },
  ],
};

describe('ContentMatcher', () => {
  it('matches the text after the date and speaker prefixes, whitespace and case aside', () => {
    const matcher = new ContentMatcher(user);
    expect(matcher.match('[2023-05-08 13:56] Melanie: I went to the LGBTQ support group yesterday. It was powerful.')).toEqual(['D1:2']);
    expect(matcher.stats.exact).toBe(1);
  });

  it('uses the date and the speaker to tell repeated texts apart', () => {
    const matcher = new ContentMatcher(user);
    expect(matcher.match('[2023-05-08 13:56] Caroline: Thanks!')).toEqual(['D1:1']);
    expect(matcher.match('[2023-06-09 19:55] Melanie: Thanks!')).toEqual(['D2:2']);
    expect(matcher.stats.ambiguous).toBe(0);
  });

  it('counts every candidate when nothing tells them apart, and says so', () => {
    const matcher = new ContentMatcher(user);
    expect(matcher.match('Thanks!')).toEqual(['D1:1', 'D2:1', 'D2:2']);
    expect(matcher.stats.ambiguous).toBe(1);
  });

  it('places a split part inside its message, with part markers and ellipses dropped', () => {
    const matcher = new ContentMatcher(user);
    expect(matcher.match('[2023-06-09 19:55] Melanie: (part 2/2) watched the meteor shower all night long.')).toEqual(['D2:3']);
    expect(matcher.match('[2023-06-09 19:55] Melanie: We camped by the lake and …')).toEqual(['D2:3']);
    expect(matcher.stats.piece).toBe(2);
  });

  it('counts a unit for every turn it spans', () => {
    const matcher = new ContentMatcher(user);
    const span = 'Melanie: I went to the LGBTQ support group yesterday. It was powerful.\nCaroline: Note: bring the "painting" tomorrow';
    expect(matcher.match(span).sort()).toEqual(['D1:2', 'D1:3']);
  });

  it('keeps a colon inside the text when the word before it is no speaker', () => {
    const matcher = new ContentMatcher(user);
    expect(matcher.match('[2023-05-08 13:56] Note: bring the "painting" tomorrow')).toEqual(['D1:3']);
  });

  it('falls back to shared words when the text was rewritten', () => {
    const matcher = new ContentMatcher(user);
    expect(matcher.match('Melanie: we camped by the lake, and watched the meteor shower all night')).toEqual(['D2:3']);
    expect(matcher.stats.fuzzy).toBe(1);
    expect(matcher.match('something else entirely')).toEqual([]);
    expect(matcher.stats.unmatched).toBe(1);
  });
});
