/** Periods of the calendar as half-open ranges of Unix milliseconds. All calendar arithmetic is UTC. */

import { COUNT_WORDS, ORDINAL_INDEX, SEASON_START, toCount, vagueRange } from './vocabulary.js';

/** A half-open time range [startMs, endMs) in Unix milliseconds. */
export interface TimePeriod {
  startMs: number;
  endMs: number;
}

export const DAY_MS = 86_400_000;
export const WEEK_MS = 7 * DAY_MS;

export function dayStart(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

export function monthPeriod(year: number, month: number): TimePeriod {
  return { startMs: Date.UTC(year, month, 1), endMs: Date.UTC(year, month + 1, 1) };
}

/** Parts of a month by their first and last day (inclusive; 31 stands for the month's last day). */
const MONTH_PARTS: ReadonlyMap<string, readonly [number, number]> = new Map([
  ['beginning', [1, 10]], ['start', [1, 10]], ['early', [1, 10]],
  ['middle', [11, 20]], ['mid', [11, 20]],
  ['end', [21, 31]], ['late', [21, 31]],
  ['first half', [1, 15]], ['second half', [16, 31]],
  ['first week', [1, 7]], ['second week', [8, 14]], ['third week', [15, 21]], ['fourth week', [22, 28]],
]);

/** Days `first`..`last` of a month, the last clipped to the month's end ("the last week": its final seven days). */
export function monthPart(year: number, month: number, part: string): TimePeriod {
  const monthEnd = monthPeriod(year, month).endMs;
  if (part === 'last week') return { startMs: monthEnd - WEEK_MS, endMs: monthEnd };
  const [first, last] = MONTH_PARTS.get(part)!;
  return { startMs: Date.UTC(year, month, first), endMs: Math.min(monthEnd, Date.UTC(year, month, last + 1)) };
}

/** The first, second… or last Saturday and Sunday of a month. */
export function monthWeekend(year: number, month: number, which: string): TimePeriod {
  const firstSaturday = 1 + ((6 - new Date(Date.UTC(year, month, 1)).getUTCDay() + 7) % 7);
  const daysInMonth = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const nth = ORDINAL_INDEX.get(which)!;
  const saturday = nth > 0 ? firstSaturday + 7 * (nth - 1) : firstSaturday + 7 * Math.floor((daysInMonth - firstSaturday) / 7);
  const startMs = Date.UTC(year, month, saturday);
  return { startMs, endMs: startMs + 2 * DAY_MS };
}

export function yearPeriod(year: number): TimePeriod {
  return { startMs: Date.UTC(year, 0, 1), endMs: Date.UTC(year + 1, 0, 1) };
}

export function dayPeriod(year: number, month: number, day: number): TimePeriod | null {
  const startMs = Date.UTC(year, month, day);
  // Date.UTC rolls 31 June over to 1 July; a day that does not exist names no period.
  if (new Date(startMs).getUTCDate() !== day) return null;
  return { startMs, endMs: startMs + DAY_MS };
}

/**
 * A month or day named without a year is the latest one that has begun by the reference: a memory
 * question asks about the past, so "in August" asked in January means last August.
 */
export function latestYearFor(month: number, day: number, reference: Date): number {
  const year = reference.getUTCFullYear();
  return Date.UTC(year, month, day) > reference.getTime() ? year - 1 : year;
}

export function unitMs(unit: string): number {
  const singular = unit.toLowerCase().replace(/s$/, '');
  if (singular === 'day') return DAY_MS;
  if (singular === 'week') return WEEK_MS;
  if (singular === 'month') return 30.44 * DAY_MS;
  return 365.25 * DAY_MS;
}

/** The season that starts in `year` (winter 2023 is December 2023 to February 2024). */
export function seasonPeriod(year: number, season: string): TimePeriod {
  const month = SEASON_START.get(season.toLowerCase())!;
  return { startMs: Date.UTC(year, month, 1), endMs: Date.UTC(year, month + 3, 1) };
}

/**
 * "last summer": the latest one over by the reference; "this summer": the one of the reference's
 * year (in January, this winter began in December); "in the summer": the latest one begun.
 */
export function relativeSeason(which: string, season: string, reference: Date): TimePeriod {
  let year = reference.getUTCFullYear();
  const now = reference.getTime();
  if (which === 'last' || which === 'past') {
    while (seasonPeriod(year, season).endMs > now) year--;
  } else if (which === 'this') {
    if (SEASON_START.get(season.toLowerCase()) === 11 && reference.getUTCMonth() < 2) year--;
  } else {
    while (seasonPeriod(year, season).startMs > now) year--;
  }
  return seasonPeriod(year, season);
}

/** Monday 00:00 of the reference's week. */
export function weekStart(reference: Date): number {
  const sinceMonday = (reference.getUTCDay() + 6) % 7;
  return dayStart(reference.getTime()) - sinceMonday * DAY_MS;
}

/** Beginning, middle or end of a season or year: its first, middle or last third. */
export function partThird(part: string): 0 | 1 | 2 {
  const lower = part.toLowerCase();
  if (lower === 'beginning' || lower === 'start' || lower === 'early') return 0;
  if (lower === 'middle' || lower === 'mid') return 1;
  return 2;
}

/** The first, middle or last third of a period of whole months (a season: one month; a year: four). */
export function monthsThird(period: TimePeriod, third: 0 | 1 | 2): TimePeriod {
  const start = new Date(period.startMs);
  const months = Math.round((period.endMs - period.startMs) / (30.44 * DAY_MS));
  const size = months / 3;
  const year = start.getUTCFullYear();
  const month = start.getUTCMonth();
  return { startMs: Date.UTC(year, month + third * size, 1), endMs: Date.UTC(year, month + (third + 1) * size, 1) };
}

/** The Saturday (00:00) of the weekend after `dayMs`'s day (strictly), or the one before it ("the weekend before": over by then). */
export function weekendNear(dayMs: number, direction: 'before' | 'after'): TimePeriod {
  const weekday = new Date(dayMs).getUTCDay();
  const saturday = direction === 'after' ? dayMs + ((6 - weekday + 7) % 7 || 7) * DAY_MS : dayMs - [8, 2, 3, 4, 5, 6, 7][weekday]! * DAY_MS;
  return { startMs: saturday, endMs: saturday + 2 * DAY_MS };
}

export function relativeDays(reference: Date | null, daysBack: number): TimePeriod | null {
  if (reference === null) return null;
  const startMs = dayStart(reference.getTime()) - daysBack * DAY_MS;
  return { startMs, endMs: startMs + DAY_MS };
}

/**
 * "3 days ago" is rarely exact: a day either side for days, half a unit either side otherwise.
 * Vague counts ("a few weeks ago") span their whole range.
 */
export function agoPeriod(countWord: string, unit: string, reference: Date): TimePeriod {
  const lower = countWord.toLowerCase().replace(/\s+/g, ' ');
  const vague = !COUNT_WORDS.has(lower) && !/^\d/.test(lower);
  const [fewest, most] = vague ? vagueRange(lower) : [toCount(lower), toCount(lower)];
  const size = unitMs(unit);
  const now = reference.getTime();
  if (size === DAY_MS) {
    return { startMs: dayStart(now) - (most + 1) * DAY_MS, endMs: dayStart(now) - (fewest - 2) * DAY_MS };
  }
  return { startMs: now - (most + 0.5) * size, endMs: now - (fewest - 0.5) * size };
}

export function calendarPeriod(which: 'last' | 'this', unit: string, reference: Date): TimePeriod {
  const year = reference.getUTCFullYear();
  const month = reference.getUTCMonth();
  const untilNow = reference.getTime() + 1;
  switch (unit) {
    case 'week': {
      const start = weekStart(reference);
      return which === 'last' ? { startMs: start - WEEK_MS, endMs: start } : { startMs: start, endMs: untilNow };
    }
    case 'weekend': {
      // The Saturday of the latest weekend that is over, or of this one when inside it.
      const day = reference.getUTCDay();
      const back = which === 'last' ? [8, 2, 3, 4, 5, 6, 7][day]! : [1, -5, -4, -3, -2, -1, 0][day]!;
      const saturday = dayStart(reference.getTime()) - back * DAY_MS;
      return { startMs: saturday, endMs: saturday + 2 * DAY_MS };
    }
    case 'month':
      return which === 'last'
        ? monthPeriod(year, month - 1)
        : { startMs: Date.UTC(year, month, 1), endMs: untilNow };
    default:
      return which === 'last' ? yearPeriod(year - 1) : { startMs: Date.UTC(year, 0, 1), endMs: untilNow };
  }
}

/** Whether two half-open periods share any instant. */
export function periodsOverlap(a: TimePeriod, b: TimePeriod): boolean {
  return a.startMs < b.endMs && b.startMs < a.endMs;
}
