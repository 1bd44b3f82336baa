/**
 * The rules that read periods out of words, each a pattern and how to resolve its match against a
 * reference date; `named-period.ts` applies them in order.
 */

import {
  agoPeriod,
  calendarPeriod,
  DAY_MS,
  dayPeriod,
  dayStart,
  latestYearFor,
  monthPart,
  monthPeriod,
  monthsThird,
  monthWeekend,
  partThird,
  relativeDays,
  relativeSeason,
  seasonPeriod,
  unitMs,
  WEEK_MS,
  weekendNear,
  weekStart,
  yearPeriod,
  type TimePeriod,
} from './calendar.js';
import { COUNT, COUNT_WORDS, MONTH, MONTH_INDEX, ORDINAL, ORDINAL_WORDS, SEASON, toCount, UNIT, vagueRange, VAGUE_COUNT, WEEKDAY, WEEKDAY_INDEX, YEAR, YEAR_TEXT } from './vocabulary.js';

export interface PeriodRule {
  readonly pattern: RegExp;
  /** Null when the words name no usable period (a 31 June, a date in the future). */
  readonly resolve: (match: RegExpMatchArray, reference: Date | null) => TimePeriod | null;
}

/**
 * One calendar day in any spelling the rules read, as a single span for `dayFromText`: "8 May
 * 2023", "the 8th of May", "May 8th, 2023", "Dec 4", "2023-05-08", "12/25/2023", "25.12.2023".
 * Two-digit years only with slashes ("4/13/23"): with dots or dashes they read as scores and versions.
 * A month name ends at a word boundary: "4 decades" is not 4 December, "3 Marvel movies" not 3 March.
 */
export const DAY_TEXT =
  String.raw`(?:\d{1,2}${ORDINAL}\s+(?:of\s+)?${MONTH}\b\.?(?:,?\s+${YEAR_TEXT})?|${MONTH}\b\.?\s+\d{1,2}${ORDINAL}(?:,?\s+${YEAR_TEXT})?` +
  String.raw`|${YEAR_TEXT}[-/]\d{1,2}[-/]\d{1,2}|\d{1,2}\/\d{1,2}\/(?:${YEAR_TEXT}|\d{2})|\d{1,2}[.-]\d{1,2}[.-]${YEAR_TEXT})`;
const DAY_MONTH_YEAR = new RegExp(String.raw`^(\d{1,2})${ORDINAL}\s+(?:of\s+)?(${MONTH})\.?(?:,?\s+${YEAR})?$`, 'i');
const MONTH_DAY_YEAR = new RegExp(String.raw`^(${MONTH})\.?\s+(\d{1,2})${ORDINAL}(?:,?\s+${YEAR})?$`, 'i');
const ISO_DATE = new RegExp(String.raw`^${YEAR}[-/](\d{1,2})[-/](\d{1,2})$`);
const NUMERIC_DATE = /^(\d{1,2})[/.-](\d{1,2})[/.-](\d{2}|\d{4})$/;

/**
 * A numeric date with the year last. The convention: the order of day and month is read from the
 * numbers, never assumed. A number above 12 can only be the day (25/12/2023, 12/25/2023); equal
 * numbers are one date either way (4/4/2023). When both orders give a real, different day
 * (12/4/2023: 12 April or 4 December) the date names nothing: a guess boosts the wrong month
 * half the time, and no boost costs only what the date could have added. Two-digit years are 20xx.
 */
function numericDate(first: number, second: number, yearText: string): TimePeriod | null {
  const year = yearText.length === 2 ? 2000 + Number(yearText) : Number(yearText);
  if (first > 12 && second <= 12) return dayPeriod(year, second - 1, first);
  if (second > 12 && first <= 12) return dayPeriod(year, first - 1, second);
  if (first === second) return dayPeriod(year, first - 1, first);
  return null;
}

/** The day a `DAY_TEXT` span names; one without a year is the latest begun by the reference. */
export function dayFromText(text: string, reference: Date | null): TimePeriod | null {
  const words = text.trim().replace(/\s+/g, ' ');
  let m = DAY_MONTH_YEAR.exec(words);
  const spelled = m !== null ? { day: m[1]!, month: m[2]!, year: m[3] } : (m = MONTH_DAY_YEAR.exec(words)) !== null ? { day: m[2]!, month: m[1]!, year: m[3] } : null;
  if (spelled !== null) {
    const month = MONTH_INDEX.get(spelled.month.toLowerCase())!;
    const day = Number(spelled.day);
    if (spelled.year !== undefined) return dayPeriod(Number(spelled.year), month, day);
    return reference === null ? null : dayPeriod(latestYearFor(month, day, reference), month, day);
  }
  if ((m = ISO_DATE.exec(words)) !== null) return dayPeriod(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  if ((m = NUMERIC_DATE.exec(words)) !== null) return numericDate(Number(m[1]), Number(m[2]), m[3]!);
  return null;
}

/**
 * "the Friday before 15 May", "the weekend after 3 June 2023", "the day before May 8", "the week
 * of 4 December": periods placed by a date. Read before the dates that only bound an event are
 * blanked, since these words are the same ("before 15 May").
 */
export const DATE_RELATIVE_RULES: readonly PeriodRule[] = [
  {
    pattern: new RegExp(String.raw`\bthe\s+week\s+of\s+(?:${WEEKDAY},?\s+)?(?:the\s+)?(${DAY_TEXT})(?![\d/.-]*\d)`, 'gi'),
    resolve: (m, reference) => {
      const day = dayFromText(m[1]!, reference);
      if (day === null) return null;
      const startMs = weekStart(new Date(day.startMs));
      return { startMs, endMs: startMs + WEEK_MS };
    },
  },
  {
    pattern: new RegExp(String.raw`\b(?:the\s+)?(${WEEKDAY}|weekend|day|week)\s+(before|after)\s+(?:${WEEKDAY},?\s+)?(?:the\s+)?(${DAY_TEXT})(?![\d/.-]*\d)`, 'gi'),
    resolve: (m, reference) => {
      const day = dayFromText(m[3]!, reference);
      if (day === null) return null;
      const what = m[1]!.toLowerCase();
      const direction = m[2]!.toLowerCase() as 'before' | 'after';
      if (what === 'weekend') return weekendNear(day.startMs, direction);
      if (what === 'week') return direction === 'before' ? { startMs: day.startMs - WEEK_MS, endMs: day.startMs } : { startMs: day.endMs, endMs: day.endMs + WEEK_MS };
      let daysAway = 1;
      if (what !== 'day') {
        const from = new Date(day.startMs).getUTCDay();
        const to = WEEKDAY_INDEX.get(what)!;
        daysAway = direction === 'before' ? ((from - to + 7) % 7) || 7 : ((to - from + 7) % 7) || 7;
      }
      const startMs = day.startMs + (direction === 'before' ? -daysAway : daysAway) * DAY_MS;
      return { startMs, endMs: startMs + DAY_MS };
    },
  },
];

/**
 * Ordered from most to least specific: each match blanks its words so that "8 May 2023" is not
 * read again as "May 2023" or "2023".
 */
export const PERIOD_RULES: readonly PeriodRule[] = [
  {
    // A weekday before the date is part of it ("on Friday, 12 May"), not "last Friday".
    pattern: new RegExp(String.raw`\b(?:${WEEKDAY},?\s+(?:the\s+)?)?(${DAY_TEXT})(?![\d/.-]*\d)(?!:)`, 'gi'),
    resolve: (m, reference) => dayFromText(m[1]!, reference),
  },
  {
    // "the first three days of May", "the last two weeks of August 2023": counted from the month's edge.
    pattern: new RegExp(
      String.raw`\b(?:the\s+)?(first|last|final)\s+(${COUNT}|few|couple\s+of|several)\s+(days|weeks)\s+of\s+(?:the\s+month\s+of\s+)?(${MONTH})\.?(?:,?\s+${YEAR})?\b`,
      'gi',
    ),
    resolve: (m, reference) => {
      const month = MONTH_INDEX.get(m[4]!.toLowerCase())!;
      if (m[5] === undefined && reference === null) return null;
      const year = m[5] !== undefined ? Number(m[5]) : latestYearFor(month, 1, reference!);
      const word = m[2]!.toLowerCase().replace(/\s+/g, ' ');
      const count = COUNT_WORDS.has(word) || /^\d/.test(word) ? toCount(word) : vagueRange(word)[1];
      const span = count * (m[3]!.toLowerCase() === 'weeks' ? WEEK_MS : DAY_MS);
      const whole = monthPeriod(year, month);
      return m[1]!.toLowerCase() === 'first'
        ? { startMs: whole.startMs, endMs: Math.min(whole.endMs, whole.startMs + span) }
        : { startMs: Math.max(whole.startMs, whole.endMs - span), endMs: whole.endMs };
    },
  },
  {
    // "the first week of August 2023", "the last weekend of May", "the beginning of January",
    // "the second half of September 2022", "late March": a part of the month, not all of it.
    pattern: new RegExp(
      String.raw`\b(?:(?:the\s+)?(?:(first|1st|second|2nd|third|3rd|fourth|4th|last)\s+(week|weekend)|(beginning|start|middle|end|first\s+half|second\s+half))\s+of\s+(?:the\s+month\s+of\s+)?|(early|mid|late)[\s-]+)(${MONTH})\.?(?:,?\s+${YEAR})?\b`,
      'gi',
    ),
    resolve: (m, reference) => {
      const month = MONTH_INDEX.get(m[5]!.toLowerCase())!;
      if (m[6] === undefined && reference === null) return null;
      const year = m[6] !== undefined ? Number(m[6]) : latestYearFor(month, 1, reference!);
      if (m[1] === undefined) return monthPart(year, month, (m[3] ?? m[4])!.toLowerCase().replace(/\s+/g, ' '));
      const ordinal = ORDINAL_WORDS.get(m[1].toLowerCase()) ?? m[1].toLowerCase();
      return m[2]!.toLowerCase() === 'weekend' ? monthWeekend(year, month, ordinal) : monthPart(year, month, `${ordinal} week`);
    },
  },
  {
    pattern: new RegExp(String.raw`\b(${MONTH})\.?,?\s+(?:of\s+)?${YEAR}\b`, 'gi'),
    resolve: (m) => monthPeriod(Number(m[2]), MONTH_INDEX.get(m[1]!.toLowerCase())!),
  },
  {
    // "on the 4th": that day of the latest month in which it has begun. Not "the 4th time".
    pattern: new RegExp(
      String.raw`\b(?:on\s+)?(?:${WEEKDAY},?\s+)?the\s+(\d{1,2})(?:st|nd|rd|th)\b(?=\s*(?:$|[^\w\s]|(?:at|in|on|when|after|before|i|we|he|she|they|you)\b))`,
      'gi',
    ),
    resolve: (m, reference) => {
      if (reference === null) return null;
      const day = Number(m[1]);
      const year = reference.getUTCFullYear();
      const month = day <= reference.getUTCDate() ? reference.getUTCMonth() : reference.getUTCMonth() - 1;
      const first = new Date(Date.UTC(year, month, 1));
      return dayPeriod(first.getUTCFullYear(), first.getUTCMonth(), day);
    },
  },
  {
    // "towards the end of summer", "early summer 2023", "the beginning of last winter": a third of the season.
    pattern: new RegExp(
      String.raw`\b(?:(?:the\s+)?(beginning|start|middle|end)\s+of\s+(?:the\s+)?|(early|mid|late)[\s-]+)(?:(this|last|past)\s+)?${SEASON}(?:\s+(?:of\s+)?${YEAR})?\b`,
      'gi',
    ),
    resolve: (m, reference) => {
      const third = partThird((m[1] ?? m[2])!);
      if (m[5] !== undefined) return monthsThird(seasonPeriod(Number(m[5]), m[4]!), third);
      if (reference === null) return null;
      return monthsThird(relativeSeason(m[3]?.toLowerCase() ?? 'in', m[4]!, reference), third);
    },
  },
  {
    // "the end of the year", "early 2023", "mid-2022", "the beginning of this month", "late last year".
    pattern: new RegExp(
      String.raw`\b(?:(?:the\s+)?(beginning|start|middle|end)\s+of\s+|(early|mid|late)[\s-]+)(?:(?:(the|this|last|past|previous)\s+)?(month|year)|${YEAR})\b`,
      'gi',
    ),
    resolve: (m, reference) => {
      const part = (m[1] ?? m[2])!.toLowerCase();
      if (m[5] !== undefined) return monthsThird(yearPeriod(Number(m[5])), partThird(part));
      if (reference === null) return null;
      const back = m[3] !== undefined && /^(?:last|past|previous)$/i.test(m[3]) ? 1 : 0;
      if (m[4]!.toLowerCase() === 'year') return monthsThird(yearPeriod(reference.getUTCFullYear() - back), partThird(part));
      const first = new Date(Date.UTC(reference.getUTCFullYear(), reference.getUTCMonth() - back, 1));
      return monthPart(first.getUTCFullYear(), first.getUTCMonth(), part);
    },
  },
  {
    // "from May to July 2023", "between March and May": both ends, the first before the second.
    pattern: new RegExp(
      String.raw`\b(?:from|between)\s+(${MONTH})\.?\s+(?:to|and|until|till|through)\s+(${MONTH})\.?(?:,?\s+${YEAR})?\b`,
      'gi',
    ),
    resolve: (m, reference) => {
      const first = MONTH_INDEX.get(m[1]!.toLowerCase())!;
      const last = MONTH_INDEX.get(m[2]!.toLowerCase())!;
      if (m[3] === undefined && reference === null) return null;
      const endYear = m[3] !== undefined ? Number(m[3]) : latestYearFor(last, 1, reference!);
      const startYear = first <= last ? endYear : endYear - 1;
      return { startMs: monthPeriod(startYear, first).startMs, endMs: monthPeriod(endYear, last).endMs };
    },
  },
  {
    pattern: new RegExp(String.raw`\b${SEASON}\s+(?:of\s+)?${YEAR}\b`, 'gi'),
    resolve: (m) => seasonPeriod(Number(m[2]), m[1]!),
  },
  {
    pattern: new RegExp(String.raw`\b(last|past|this|in\s+the|during\s+the|over\s+the)\s+${SEASON}\b`, 'gi'),
    resolve: (m, reference) => (reference === null ? null : relativeSeason(m[1]!.toLowerCase().split(/\s+/)[0]!, m[2]!, reference)),
  },
  {
    pattern: new RegExp(String.raw`\b(?:in|during|throughout|of|for|the\s+year)\s+${YEAR}\b`, 'gi'),
    resolve: (m) => yearPeriod(Number(m[1])),
  },
  {
    pattern: new RegExp(
      String.raw`\b(in|during|throughout|of|early|mid|late|last|this|between|from)[\s-]+(?:the\s+month\s+of\s+)?(${MONTH})\b`,
      'gi',
    ),
    resolve: (m, reference) => {
      const qualifier = m[1]!.toLowerCase();
      if (reference === null) return null;
      const month = MONTH_INDEX.get(m[2]!.toLowerCase())!;
      const year =
        qualifier === 'this' ? reference.getUTCFullYear() : latestYearFor(month, 1, reference);
      return monthPeriod(year, month);
    },
  },
  {
    pattern: /\b(?:the\s+)?day\s+before\s+yesterday\b/gi,
    resolve: (_m, reference) => relativeDays(reference, 2),
  },
  {
    pattern: /\blast\s+night\b/gi,
    resolve: (_m, reference) =>
      reference === null ? null : { startMs: dayStart(reference.getTime()) - DAY_MS, endMs: reference.getTime() + 1 },
  },
  {
    pattern: /\byesterday\b/gi,
    resolve: (_m, reference) => relativeDays(reference, 1),
  },
  {
    pattern: /\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b/gi,
    resolve: (_m, reference) => relativeDays(reference, 0),
  },
  {
    pattern: new RegExp(String.raw`\b(?:last|past)\s+(${COUNT}|few|several|couple\s+of)\s+(${UNIT})\b`, 'gi'),
    resolve: (m, reference) => {
      if (reference === null) return null;
      const word = m[1]!.toLowerCase();
      const count = COUNT_WORDS.has(word) || /^\d/.test(word) ? toCount(word) : vagueRange(word)[1];
      return { startMs: reference.getTime() - count * unitMs(m[2]!), endMs: reference.getTime() + 1 };
    },
  },
  {
    pattern: new RegExp(String.raw`\b(${COUNT}|${VAGUE_COUNT})\s+(${UNIT})\s+ago\b`, 'gi'),
    resolve: (m, reference) => (reference === null ? null : agoPeriod(m[1]!, m[2]!, reference)),
  },
  {
    pattern: /\bthe\s+(day|week|month|year)\s+(?:before|prior)\b/gi,
    resolve: (m, reference) => {
      if (reference === null) return null;
      const unit = m[1]!.toLowerCase();
      if (unit === 'day') return relativeDays(reference, 1);
      const endMs = dayStart(reference.getTime());
      return { startMs: endMs - unitMs(unit), endMs };
    },
  },
  {
    pattern: /\b(?:the\s+)?past\s+(day|week|month|year)\b/gi,
    resolve: (m, reference) =>
      reference === null ? null : { startMs: reference.getTime() - unitMs(m[1]!), endMs: reference.getTime() + 1 },
  },
  {
    pattern: /\b(last|previous|this|earlier\s+this)\s+(week|weekend|month|year)\b/gi,
    resolve: (m, reference) => {
      if (reference === null) return null;
      const which = /^(?:last|previous)/i.test(m[1]!) ? 'last' : 'this';
      return calendarPeriod(which, m[2]!.toLowerCase(), reference);
    },
  },
  {
    pattern: new RegExp(String.raw`\b(?:last|on|this\s+past)\s+(${WEEKDAY})\b`, 'gi'),
    resolve: (m, reference) => {
      if (reference === null) return null;
      const weekday = WEEKDAY_INDEX.get(m[1]!.toLowerCase())!;
      const daysBack = (reference.getUTCDay() - weekday + 7) % 7 || 7;
      return relativeDays(reference, daysBack);
    },
  },
];
