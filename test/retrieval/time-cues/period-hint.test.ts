import { describe, expect, it } from 'vitest';
import { mulberry32 } from '../../../bench/workload.js';
import { mayNamePeriod, namedPeriod, periodNamed } from '../../../src/retrieval/time-cues/named-period.js';

/**
 * namedPeriod runs its rules only over a text holding a digit or a word of the rules' vocabulary
 * (`mayNamePeriod`): that hint must hold for every text any rule reads a period from, or a
 * question naming one would lose its period cue.
 */

/** Tuesday 30 May 2023, 15:31 UTC. */
const REFERENCE = new Date(Date.UTC(2023, 4, 30, 15, 31));

/** The words the rules are made of, those in the hint and the rest, and filler around them. */
const TOKENS = [
  'the', 'of', 'in', 'on', 'at', 'last', 'past', 'this', 'next', 'early', 'mid', 'late', 'mid-', 'first', 'second', '2nd', 'final',
  'beginning', 'start', 'middle', 'end', 'half', 'from', 'to', 'between', 'and', 'until', 'through', 'during', 'over', 'throughout',
  'for', 'since', 'before', 'after', 'prior', 'ago', 'as', 'by', 'a', 'an', 'one', 'two', 'few', 'several', 'couple',
  'day', 'days', 'week', 'weeks', 'weekend', 'month', 'months', 'year', 'years', 'night', 'morning', 'evening', 'yesterday', 'today', 'tonight',
  'jan', 'Sept', 'mar', 'May', 'june', 'october', 'dec.', 'monday', 'Friday', 'summer', 'fall', 'winter',
  'christmas', 'holidays', 'semester', 'recently', 'lately', 'other', 'time', 'when', 'did', 'Caroline', 'go', 'paint',
  '4th', '17th', '2023', '1999', '8', '12/05/2023', '2023-05-08', '3pm', '10:30',
];

describe('the hint before the named-period rules', () => {
  it('holds for every generated text a rule reads a period from, and leaves most texts without one unread', () => {
    // Seeded, so a failure names a text that reproduces.
    const next = mulberry32(30);
    let periods = 0;
    let withoutHint = 0;
    for (let i = 0; i < 20_000; i++) {
      const words = Array.from({ length: 2 + Math.floor(next() * 5) }, () => TOKENS[Math.floor(next() * TOKENS.length)]);
      const text = words.join(' ');
      const period = periodNamed(text, REFERENCE);
      if (period !== null) {
        periods++;
        expect({ text, hint: mayNamePeriod(text) }).toEqual({ text, hint: true });
      }
      if (!mayNamePeriod(text)) {
        withoutHint++;
        expect(namedPeriod(text, REFERENCE)).toBeNull();
      }
    }
    // The generator reaches the rules often, and texts without the hint too.
    expect(periods).toBeGreaterThan(2_000);
    expect(withoutHint).toBeGreaterThan(1_000);
  });

  it('answers as the rules do for questions with and without a period', () => {
    for (const question of ['What did Caroline paint last summer?', 'Where did Jon go in early Sept?', 'What happened on the 17th?', 'What does Melanie think about adoption?', 'Who is Caroline?']) {
      expect(namedPeriod(question, REFERENCE)).toEqual(periodNamed(question, REFERENCE));
    }
    expect(mayNamePeriod('What does Melanie think about adoption?')).toBe(false);
  });
});
