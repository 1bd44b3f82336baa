import { describe, expect, it } from 'vitest';
import { periodsOverlap } from '../../../src/retrieval/time-cues/calendar.js';
import { formatReadableDate, formatStamp } from '../../../src/retrieval/time-cues/formatters.js';
import { eventPeriod, namedPeriod } from '../../../src/retrieval/time-cues/named-period.js';
import { hasTimeExpression } from '../../../src/retrieval/time-cues/time-expression.js';
import { isWhenQuestion } from '../../../src/retrieval/time-cues/when-question.js';

/** Tuesday 30 May 2023, 15:31 UTC. */
const REFERENCE = new Date(Date.UTC(2023, 4, 30, 15, 31));
const day = (year: number, month: number, date: number): number => Date.UTC(year, month - 1, date);
const DAY_MS = 86_400_000;

describe('isWhenQuestion', () => {
  it.each([
    'When did Caroline go to the LGBTQ support group?',
    'when is Melanie\'s birthday',
    'What year did Melanie paint a sunrise?',
    'Which month was the trip?',
    "In which month's last week did they meet?",
    'What date is the party?',
    'What day of the week did I meet Juan?',
    'What time did she leave?',
    'How long ago was Caroline\'s 18th birthday?',
    'How long has John been surfing?',
    'How many days passed between the two events?',
    'How many weeks ago did I start using the app?',
    'Since when has he lived there?',
    'On what date did they marry?',
  ])('recognises %j', (query) => {
    expect(isWhenQuestion(query)).toBe(true);
  });

  it.each([
    'What did Caroline research?',
    'What time management techniques do they use?',
    'How many times did she call?',
    'Who did Caroline date?',
    'Where did Joanna travel?',
    'What is the name of my hamster?',
  ])('rejects %j', (query) => {
    expect(isWhenQuestion(query)).toBe(false);
  });
});

describe('hasTimeExpression', () => {
  it.each([
    'I went to a support group yesterday',
    'See you tomorrow!',
    'It happened two years ago',
    'We went camping last weekend',
    'Last week was hectic',
    'Next month I start my new job',
    'I was there this morning',
    'She was born in 1994',
    'I loved the 90s',
    'I loved the 1990s',
    'Meet me on 5/12',
    'Meet me at 10:30',
    'Meet me at 5pm',
    'It was a Tuesday',
    'In January it snowed',
    'We met on 5 May.',
    'We met in May',
    'in may we went hiking',
    'Since early May I run daily',
    'The big day is May 20',
    'Jan 5 was fun',
    'a few days later she called',
    'a couple of weeks',
    'for 3 hours',
    'the week before the exam',
    'over the summer',
    'during the holidays',
    'Christmas was fun',
    'I recently started painting',
    'the other day I saw him',
    'So much has changed since last time we talked',
    'Since we last spoke, some big things have happened',
    'A lot happened since our last chat',
  ])('finds a time in %j', (text) => {
    expect(hasTimeExpression(text)).toBe(true);
  });

  it.each([
    'Caroline: I love painting',
    'Have a nice day!',
    'I may go to the gym',
    'This may be hard',
    'She may be right, May I ask why?',
    'Jan said hi',
    "I'm feeling great",
    'That sounds amazing, tell me more',
    'My dog is called Max',
    'I have loved turtles since I was a boy',
    'Ever since we met, I smile more',
  ])('finds no time in %j', (text) => {
    expect(hasTimeExpression(text)).toBe(false);
  });
});

describe('namedPeriod', () => {
  const period = (query: string, reference: Date = REFERENCE) => namedPeriod(query, reference);

  it('reads a full date in its common spellings as that UTC day', () => {
    const may8 = { startMs: day(2023, 5, 8), endMs: day(2023, 5, 9) };
    for (const query of [
      'What happened on 8 May 2023?',
      'What happened on 8 May, 2023?',
      'What happened on the 8th of May 2023?',
      'What happened on May 8, 2023?',
      'What happened on May 8th 2023?',
      'What happened on 2023-05-08?',
    ]) {
      expect(period(query)).toEqual(may8);
    }
  });

  it('reads a day month-first and day-first, with or without a year, and a weekday before it', () => {
    const dec4 = { startMs: day(2022, 12, 4), endMs: day(2022, 12, 5) };
    for (const query of ['on December 4, 2022', 'on 4 December 2022', 'on Dec 4', 'on 4 Dec', 'on the 4th of December', 'on Sunday, 4 December 2022']) {
      expect(period(query)).toEqual(dec4);
    }
    // The weekday belongs to the date: not "last Sunday" as well.
    expect(period('What did she do on Friday, 12 May 2023?')).toEqual({ startMs: day(2023, 5, 12), endMs: day(2023, 5, 13) });
  });

  it('reads "the 4th" as that day of the latest month in which it has begun', () => {
    expect(period('What happened on the 4th?')).toEqual({ startMs: day(2023, 5, 4), endMs: day(2023, 5, 5) });
    expect(period('What did she do on Friday the 12th?')).toEqual({ startMs: day(2023, 5, 12), endMs: day(2023, 5, 13) });
    // The 31st has not come yet on 30 May: the last one was in March (April has 30 days).
    expect(period('What happened on the 31st?')).toBeNull();
    expect(period('What happened on the 30th?')).toEqual({ startMs: day(2023, 5, 30), endMs: day(2023, 5, 31) });
    expect(period('I met my teammates on the 15th after my trip')).toEqual({ startMs: day(2023, 5, 15), endMs: day(2023, 5, 16) });
    expect(period('It was the 4th time she called')).toBeNull();
    expect(period('She has painted for 4 decades')).toBeNull();
    expect(period('We watched 3 Marvel movies')).toBeNull();
    expect(period('after 4th grade')).toBeNull();
  });

  it('reads ISO and numeric dates; a numeric day/month order is read from the numbers, never guessed', () => {
    const apr13 = { startMs: day(2023, 4, 13), endMs: day(2023, 4, 14) };
    for (const query of ['on 2023-04-13', 'on 2023/4/13', 'at 2023-04-13T10:00', 'on 13/4/2023', 'on 4/13/2023', 'on 4/13/23', 'on 13.4.2023', 'on 13-04-2023']) {
      expect(period(query)).toEqual(apr13);
    }
    expect(period('on 4/4/2023')).toEqual({ startMs: day(2023, 4, 4), endMs: day(2023, 4, 5) });
    // 12 April or 4 December: nothing, and not the whole of 2023 either.
    expect(period('What happened on 12/4/2023?')).toBeNull();
    expect(period('on 31/4/2023')).toBeNull();
    expect(period('Eat 3/4 of the cake')).toBeNull();
    expect(period('since 12/25/2022')).toBeNull();
  });

  it('reads the first or last N days or weeks of a month', () => {
    const later = new Date(Date.UTC(2023, 9, 1));
    expect(period('What did Jon do in the last two weeks of August 2023?', later)).toEqual({ startMs: day(2023, 8, 18), endMs: day(2023, 9, 1) });
    expect(period('the first three days of May')).toEqual({ startMs: day(2023, 5, 1), endMs: day(2023, 5, 4) });
    expect(period('the last 3 days of April')).toEqual({ startMs: day(2023, 4, 28), endMs: day(2023, 5, 1) });
    expect(period('the last few days of April')).toEqual({ startMs: day(2023, 4, 26), endMs: day(2023, 5, 1) });
    // Never past the month: six weeks of February are February.
    expect(period('the first six weeks of February 2023')).toEqual({ startMs: day(2023, 2, 1), endMs: day(2023, 3, 1) });
  });

  it('reads the beginning, middle or end of a season, a year or the current month', () => {
    expect(period('What did they do towards the end of summer?')).toEqual({ startMs: day(2022, 8, 1), endMs: day(2022, 9, 1) });
    expect(period('in late summer 2021')).toEqual({ startMs: day(2021, 8, 1), endMs: day(2021, 9, 1) });
    expect(period('the beginning of last winter')).toEqual({ startMs: day(2022, 12, 1), endMs: day(2023, 1, 1) });
    expect(period('early 2023')).toEqual({ startMs: day(2023, 1, 1), endMs: day(2023, 5, 1) });
    expect(period('mid-2022')).toEqual({ startMs: day(2022, 5, 1), endMs: day(2022, 9, 1) });
    expect(period('at the end of last year')).toEqual({ startMs: day(2022, 9, 1), endMs: day(2023, 1, 1) });
    expect(period('at the end of the month')).toEqual({ startMs: day(2023, 5, 21), endMs: day(2023, 6, 1) });
    expect(period('the beginning of last month')).toEqual({ startMs: day(2023, 4, 1), endMs: day(2023, 4, 11) });
    // The end of this year has not begun on 30 May: a plan.
    expect(period('What will she do at the end of the year?')).toBeNull();
  });

  it('reads the week of a date (Monday to Sunday) and days, weekdays and weekends before or after a date', () => {
    // 8 May 2023 is a Monday, 10 May a Wednesday, 15 May a Monday.
    expect(period('the week of 10 May')).toEqual({ startMs: day(2023, 5, 8), endMs: day(2023, 5, 15) });
    expect(period('the week of May 8, 2023')).toEqual({ startMs: day(2023, 5, 8), endMs: day(2023, 5, 15) });
    expect(period('What did he do the Friday before 15 May?')).toEqual({ startMs: day(2023, 5, 12), endMs: day(2023, 5, 13) });
    expect(period('the Friday after 12 May 2023')).toEqual({ startMs: day(2023, 5, 19), endMs: day(2023, 5, 20) });
    // 6 May 2023 is a Saturday: the Saturday before it is the one a week earlier.
    expect(period('the Saturday before 6 May')).toEqual({ startMs: day(2023, 4, 29), endMs: day(2023, 4, 30) });
    expect(period('the day after May 8')).toEqual({ startMs: day(2023, 5, 9), endMs: day(2023, 5, 10) });
    expect(period('the day before 2023-05-08')).toEqual({ startMs: day(2023, 5, 7), endMs: day(2023, 5, 8) });
    // A Sunday is inside its weekend: the weekend before it is the previous one.
    expect(period('the weekend before Sunday 9 April 2023')).toEqual({ startMs: day(2023, 4, 1), endMs: day(2023, 4, 3) });
    expect(period('the weekend after 3 May')).toEqual({ startMs: day(2023, 5, 6), endMs: day(2023, 5, 8) });
    expect(period('the week after 3 May')).toEqual({ startMs: day(2023, 5, 4), endMs: day(2023, 5, 11) });
    expect(period('the Friday before 12/4/2023')).toBeNull();
    expect(period('the Friday after 30 May')).toBeNull();
  });

  it('reads a month and year as that month', () => {
    expect(period('What did Caroline do in May 2023?')).toEqual({ startMs: day(2023, 5, 1), endMs: day(2023, 6, 1) });
    expect(period('Where did Joanna travel to in Jul. 2022?')).toEqual({ startMs: day(2022, 7, 1), endMs: day(2022, 8, 1) });
  });

  it('reads a part of a month: its beginning, middle or end, a half, a numbered week or weekend', () => {
    expect(period('What did Nate win in the beginning of November 2022?')).toEqual({ startMs: day(2022, 11, 1), endMs: day(2022, 11, 11) });
    expect(period('Was the first half of September 2022 a good month?')).toEqual({ startMs: day(2022, 9, 1), endMs: day(2022, 9, 16) });
    expect(period('What happened in mid-February 2023?')).toEqual({ startMs: day(2023, 2, 11), endMs: day(2023, 2, 21) });
    // February 2023 has 28 days: its end and its last week stop there.
    expect(period('What happened at the end of February 2023?')).toEqual({ startMs: day(2023, 2, 21), endMs: day(2023, 3, 1) });
    expect(period('Where was Jolene during the last week of February 2023?')).toEqual({ startMs: day(2023, 2, 22), endMs: day(2023, 3, 1) });
    expect(period('Where was Tim in the second week of November?')).toEqual({ startMs: day(2022, 11, 8), endMs: day(2022, 11, 15) });
    expect(period('What did he do in the 3rd week of April 2023?')).toEqual({ startMs: day(2023, 4, 15), endMs: day(2023, 4, 22) });
    // 1 April 2023 is a Saturday; the last Saturday of April 2023 is the 29th.
    expect(period('Where did Andrew go during the first weekend of April 2023?')).toEqual({ startMs: day(2023, 4, 1), endMs: day(2023, 4, 3) });
    expect(period('the last weekend of April 2023')).toEqual({ startMs: day(2023, 4, 29), endMs: day(2023, 5, 1) });
    expect(period('What happened in early May?')).toEqual({ startMs: day(2023, 5, 1), endMs: day(2023, 5, 11) });
    expect(period('What will happen at the end of June 2023?')).toBeNull();
  });

  it('reads a year', () => {
    expect(period('When did John get an ankle injury in 2023?')).toEqual({ startMs: day(2023, 1, 1), endMs: day(2024, 1, 1) });
    expect(period("What was Caroline's 2022 trip like?")).toEqual({ startMs: day(2022, 1, 1), endMs: day(2023, 1, 1) });
  });

  it('resolves a bare month to the latest one begun by the reference', () => {
    expect(period('How many bikes did I service in March?')).toEqual({ startMs: day(2023, 3, 1), endMs: day(2023, 4, 1) });
    expect(period('What did we do in may?')).toEqual({ startMs: day(2023, 5, 1), endMs: day(2023, 6, 1) });
    expect(period('What did I do in June?')).toEqual({ startMs: day(2022, 6, 1), endMs: day(2022, 7, 1) });
    expect(period('What did I do on 8 May?')).toEqual({ startMs: day(2023, 5, 8), endMs: day(2023, 5, 9) });
  });

  it('resolves relative days against the reference', () => {
    expect(period('What did I eat yesterday?')).toEqual({ startMs: day(2023, 5, 29), endMs: day(2023, 5, 30) });
    expect(period('And the day before yesterday?')).toEqual({ startMs: day(2023, 5, 28), endMs: day(2023, 5, 29) });
    expect(period('What did I do today?')).toEqual({ startMs: day(2023, 5, 30), endMs: day(2023, 5, 31) });
    // Friday before Tuesday 30 May.
    expect(period('What did I do last Friday?')).toEqual({ startMs: day(2023, 5, 26), endMs: day(2023, 5, 27) });
  });

  it('reads last week, weekend, month and year as calendar periods', () => {
    expect(period('What did I do last week?')).toEqual({ startMs: day(2023, 5, 22), endMs: day(2023, 5, 29) });
    expect(period('What did I do last weekend?')).toEqual({ startMs: day(2023, 5, 27), endMs: day(2023, 5, 29) });
    expect(period('What certification did I complete last month?')).toEqual({ startMs: day(2023, 4, 1), endMs: day(2023, 5, 1) });
    expect(period('Where did I go last year?')).toEqual({ startMs: day(2022, 1, 1), endMs: day(2023, 1, 1) });
    expect(period('last month', new Date(Date.UTC(2023, 0, 15)))).toEqual({ startMs: day(2022, 12, 1), endMs: day(2023, 1, 1) });
  });

  it('reads "this week/month/year" as up to the reference', () => {
    expect(period('What did I buy this month?')).toEqual({ startMs: day(2023, 5, 1), endMs: REFERENCE.getTime() + 1 });
  });

  it('reads spans ending at the reference', () => {
    const now = REFERENCE.getTime();
    expect(period('What did I buy in the last two months?')?.endMs).toBe(now + 1);
    expect(period('What did I buy in the last two months?')?.startMs).toBeCloseTo(now - 2 * 30.44 * DAY_MS, -3);
    expect(period('What did I fix in the past few months?')?.startMs).toBeCloseTo(now - 5 * 30.44 * DAY_MS, -3);
    expect(period('What did I read in the past week?')).toEqual({ startMs: now - 7 * DAY_MS, endMs: now + 1 });
  });

  it('reads "N units ago" with some slack either side', () => {
    // Three days ago is 27 May; a day either side.
    expect(period('What did I cook 3 days ago?')).toEqual({ startMs: day(2023, 5, 26), endMs: day(2023, 5, 29) });
    const twoWeeks = period('Where was I two weeks ago?')!;
    expect(twoWeeks.startMs).toBe(REFERENCE.getTime() - 2.5 * 7 * DAY_MS);
    expect(twoWeeks.endMs).toBe(REFERENCE.getTime() - 1.5 * 7 * DAY_MS);
    const couple = period('I cooked something a couple of days ago. What was it?')!;
    expect(couple).toEqual({ startMs: day(2023, 5, 26), endMs: day(2023, 5, 30) });
  });

  it('resolves relative words against a date the question anchors them to', () => {
    // 10 April 2023 is a Monday; the weekend before it is 8-9 April.
    expect(period('What did Maria do last weekend before April 10, 2023?')).toEqual({
      startMs: day(2023, 4, 8),
      endMs: day(2023, 4, 10),
    });
    expect(period('Where was Tim in the week before 16 November 2023?')).toEqual({
      startMs: day(2023, 11, 9),
      endMs: day(2023, 11, 16),
    });
  });

  it('spans every period a question names', () => {
    expect(period('Where was John between August 11 and August 15 2023?', new Date(Date.UTC(2024, 0, 1)))).toEqual({
      startMs: day(2023, 8, 11),
      endMs: day(2023, 8, 16),
    });
  });

  it('ignores dates that only bound the event', () => {
    expect(period('How long has Tim played the piano, as of December 2022?')).toBeNull();
    expect(period('What has she done since 2020?')).toBeNull();
    expect(period('What did he do after May 2022?')).toBeNull();
  });

  it('returns null when nothing is named, or only a future or impossible date', () => {
    expect(period('What is the name of my hamster?')).toBeNull();
    expect(period('What may Caroline do next?')).toBeNull();
    expect(period('How many days ago did I meet Emma?')).toBeNull();
    expect(period('What will I do in June 2030?')).toBeNull();
    expect(period('What will I do next week?')).toBeNull();
    expect(period('What happened on 31 June 2023?')).toBeNull();
  });

  it('still reads absolute dates when the reference is invalid, but nothing relative', () => {
    const invalid = new Date(Number.NaN);
    expect(period('in May 2023', invalid)).toEqual({ startMs: day(2023, 5, 1), endMs: day(2023, 6, 1) });
    expect(period('last week', invalid)).toBeNull();
    expect(period('in June', invalid)).toBeNull();
  });
});

describe('eventPeriod: a turn\'s events resolved against its own date', () => {
  // Tuesday 30 May 2023, 15:31 UTC.
  const said = REFERENCE.getTime();
  const on = (y: number, m: number, d: number) => ({ startMs: day(y, m, d), endMs: day(y, m, d) + DAY_MS });

  it('resolves relative days and weekdays', () => {
    expect(eventPeriod('I went hiking yesterday with my kids', said)).toEqual(on(2023, 5, 29));
    expect(eventPeriod('The day before yesterday we painted', said)).toEqual(on(2023, 5, 28));
    expect(eventPeriod('Last Friday I ran a charity race', said)).toEqual(on(2023, 5, 26));
    const ago = eventPeriod('Two days ago I adopted a puppy', said)!;
    expect(ago.startMs).toBeLessThanOrEqual(day(2023, 5, 28));
    expect(ago.endMs).toBeGreaterThan(day(2023, 5, 28));
  });

  it('resolves relative weeks, months and years', () => {
    expect(eventPeriod('Last week I went to a pride parade', said)).toEqual({ startMs: day(2023, 5, 22), endMs: day(2023, 5, 29) });
    expect(eventPeriod('I started pottery last month', said)).toEqual({ startMs: day(2023, 4, 1), endMs: day(2023, 5, 1) });
    expect(eventPeriod('We moved here last year', said)).toEqual({ startMs: day(2022, 1, 1), endMs: day(2023, 1, 1) });
  });

  it('resolves seasons: last, this, in the, and with a year', () => {
    expect(eventPeriod('Last summer we camped by the lake', said)).toEqual({ startMs: day(2022, 6, 1), endMs: day(2022, 9, 1) });
    expect(eventPeriod('We went skiing in the winter', said)).toEqual({ startMs: day(2022, 12, 1), endMs: day(2023, 3, 1) });
    expect(eventPeriod('This spring I planted tomatoes', said)).toEqual({ startMs: day(2023, 3, 1), endMs: day(2023, 6, 1) });
    expect(eventPeriod('The trip in the summer of 2021 was great', said)).toEqual({ startMs: day(2021, 6, 1), endMs: day(2021, 9, 1) });
    // Said in January, "this winter" began last December.
    expect(eventPeriod('This winter has been cold', Date.UTC(2024, 0, 10))).toEqual({ startMs: day(2023, 12, 1), endMs: day(2024, 3, 1) });
  });

  it('resolves ranges of months, across a year end too', () => {
    expect(eventPeriod('I volunteered from March to May', said)).toEqual({ startMs: day(2023, 3, 1), endMs: day(2023, 6, 1) });
    expect(eventPeriod('We travelled between November and February 2023', said)).toEqual({ startMs: day(2022, 11, 1), endMs: day(2023, 3, 1) });
  });

  it('resolves to nothing rather than to a guess', () => {
    expect(eventPeriod('May I ask what you painted?', said)).toBeNull();
    expect(eventPeriod('I love hiking with my family', said)).toBeNull();
    // Plans are not events that happened.
    expect(eventPeriod('Next summer we will go to Spain, this summer too', said)).toBeNull();
    expect(eventPeriod('I have been painting since 2020', said)).toBeNull();
    expect(eventPeriod('yesterday', Number.NaN)).toBeNull();
  });

  it('periodsOverlap: half-open periods sharing an instant', () => {
    expect(periodsOverlap(on(2023, 5, 29), { startMs: day(2023, 5, 1), endMs: day(2023, 6, 1) })).toBe(true);
    expect(periodsOverlap(on(2023, 5, 31), { startMs: day(2023, 6, 1), endMs: day(2023, 7, 1) })).toBe(false);
  });
});

describe('formatting', () => {
  const ms = Date.UTC(2023, 4, 8, 13, 56, 42);

  it('formats a readable UTC date', () => {
    expect(formatReadableDate(ms)).toBe('8 May 2023');
    expect(formatReadableDate(Date.UTC(2024, 11, 31, 23, 59))).toBe('31 December 2024');
  });

  it('formats a UTC stamp to the minute', () => {
    expect(formatStamp(ms)).toBe('2023-05-08 13:56');
    expect(formatStamp(Date.UTC(2024, 0, 2, 3, 4))).toBe('2024-01-02 03:04');
  });

  it('formats a non-finite time as an empty string', () => {
    expect(formatReadableDate(Number.NaN)).toBe('');
    expect(formatStamp(Number.POSITIVE_INFINITY)).toBe('');
  });

  it('writes dates the analyzer and namedPeriod read back', () => {
    expect(namedPeriod(`on ${formatReadableDate(ms)}`, REFERENCE)).toEqual({ startMs: day(2023, 5, 8), endMs: day(2023, 5, 9) });
  });
});
