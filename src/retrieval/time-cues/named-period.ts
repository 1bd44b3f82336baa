/**
 * The period a text names, for a question ("in May 2023", "last week") or for an event a turn
 * tells of ("I went hiking yesterday"): turns dated inside a question's period are favoured. A
 * soft boost the caller applies, so cheap and mostly right, not exhaustive.
 */

import { yearPeriod, type TimePeriod } from './calendar.js';
import { DATE_RELATIVE_RULES, DAY_TEXT, dayFromText, PERIOD_RULES, type PeriodRule } from './period-rules.js';
import { hasTimeExpression } from './time-expression.js';
import { MONTH, ORDINAL, SEASON, UNIT, WEEKDAY, YEAR } from './vocabulary.js';

/** Years alone ("Caroline's 2022 trip"), when nothing more specific was named. */
const BARE_YEAR = /\b((?:19|20)\d{2})\b(?!s)/g;
/** Dates that bound rather than name the period of the event: "as of December 2023", "since 2020". */
const BOUNDING_DATE = new RegExp(
  String.raw`\b(as\s+of|since|after|before|until|till|by)\s+` +
    String.raw`(?:(?:the\s+)?\d{1,2}${ORDINAL}\s+(?:of\s+)?${MONTH}\.?(?:,?\s+${YEAR})?` +
    String.raw`|${MONTH}\.?(?:\s+\d{1,2}${ORDINAL})?(?:,?\s+${YEAR})?|${DAY_TEXT}|${YEAR})\b`,
  'gi',
);
/**
 * "last weekend before April 10, 2023", "the week before 16 November 2023": the date after
 * "before" replaces the reference for the relative words.
 */
const ANCHOR_DATE = new RegExp(String.raw`\bbefore\s+(?:${WEEKDAY},?\s+)?(?:the\s+)?(${DAY_TEXT})(?![\d/.-]*\d)`, 'i');

function anchorDate(query: string, reference: Date | null): Date | null {
  const m = ANCHOR_DATE.exec(query);
  const period = m === null ? null : dayFromText(m[1]!, reference);
  return period === null ? null : new Date(period.startMs);
}

/**
 * The period a question names explicitly: a date ("on 8 May 2023"), a month ("in May 2023",
 * "in June"), a year ("in 2022"), or a relative one resolved against the reference date
 * ("yesterday", "last week", "last month", "3 days ago", "in the past two months"). Months and
 * days without a year take the latest one begun by the reference. Dates that only bound the
 * event ("since 2020", "as of May 2023") name nothing. When several periods are named, the span
 * from the earliest start to the latest end. Null when none is named, when the reference is
 * needed but invalid, or when the period starts after the reference (a plan, not a memory).
 */
export function namedPeriod(query: string, reference: Date = new Date()): TimePeriod | null {
  return mayNamePeriod(query) ? periodNamed(query, reference) : null;
}

/**
 * Every rule of period-rules.ts, BARE_YEAR and ANCHOR_DATE needs a digit or one of these words to
 * match, so a text with none names no period. Most questions have none, and every rule ran over
 * each one: ~45 µs a Search of the main thread's ~1.2 ms (a CPU profile of cached Searches, 2-vCPU
 * AMD EPYC). test/retrieval/time-cues/period-hint.test.ts checks the rules never match without it.
 */
const PERIOD_HINT = new RegExp(
  String.raw`\d|\b(?:${MONTH}|${WEEKDAY}|${SEASON}|${UNIT}|weekends?|yesterday|today|tonight|night|morning|afternoon|evening)\b`,
  'i',
);

export function mayNamePeriod(text: string): boolean {
  return PERIOD_HINT.test(text);
}

/** `namedPeriod` without its hint: every rule run (exported for the test of the hint). */
export function periodNamed(query: string, reference: Date = new Date()): TimePeriod | null {
  const given = Number.isFinite(reference.getTime()) ? reference : null;
  const found: TimePeriod[] = [];
  let text = applyRules(DATE_RELATIVE_RULES, query, given, found);
  const validReference = anchorDate(text, given) ?? given;
  // A question placed by a date ("the week before 16 November") is a memory up to that date.
  const asked = anchorDate(query, given) ?? given;
  // The bounding word stays: "the week before" still needs its "before".
  text = text.replace(BOUNDING_DATE, (words, keyword: string) => keyword + ' '.repeat(words.length - keyword.length));
  text = applyRules(PERIOD_RULES, text, validReference, found);
  if (found.length === 0) {
    for (const match of text.matchAll(BARE_YEAR)) found.push(yearPeriod(Number(match[1])));
  }

  const latest = asked === null ? Infinity : asked.getTime();
  const past = found.filter((period) => period.startMs <= latest);
  if (past.length === 0) return null;
  return {
    startMs: Math.min(...past.map((period) => period.startMs)),
    endMs: Math.max(...past.map((period) => period.endMs)),
  };
}

/**
 * Each rule in turn resolves its matches into `found` and blanks them, so that a later, looser rule
 * cannot read them again ("8 May 2023" is not read again as "May 2023" or "2023"). One pass per
 * rule: rebuilding the text per match is quadratic on a long text.
 */
function applyRules(rules: readonly PeriodRule[], text: string, reference: Date | null, found: TimePeriod[]): string {
  for (const rule of rules) {
    let blanked = '';
    let copied = 0;
    for (const match of text.matchAll(rule.pattern)) {
      const period = rule.resolve(match, reference);
      if (period !== null) found.push(period);
      blanked += text.slice(copied, match.index) + ' '.repeat(match[0].length);
      copied = match.index! + match[0].length;
    }
    if (copied > 0) text = blanked + text.slice(copied);
  }
  return text;
}

/**
 * The period an event told in a turn happened in, resolved against the turn's own date: "I went
 * hiking yesterday" said on 9 May 2023 is about 8 May 2023. The same rules as a question's named
 * period (a text with no time expression is not parsed at all); null when it names none, or
 * only plans. `saysWhen` is `hasTimeExpression(text)`, for a caller that has it already.
 */
export function eventPeriod(text: string, spokenAtMs: number, saysWhen?: boolean): TimePeriod | null {
  if (!Number.isFinite(spokenAtMs) || !(saysWhen ?? hasTimeExpression(text))) return null;
  return namedPeriod(text, new Date(spokenAtMs));
}
