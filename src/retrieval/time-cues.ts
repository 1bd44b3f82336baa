/**
 * Temporal retrieval cues. In prototypes, 80% of the evidence of "when" questions held a time
 * expression against 12% of all turns, so such questions favour those turns; and a question that
 * names a period ("in May 2023", "last week") favours turns dated inside it. Both are soft
 * boosts applied by the caller, so these helpers aim for cheap and mostly right, not exhaustive.
 * All calendar arithmetic is UTC.
 */

/** A half-open time range [startMs, endMs) in Unix milliseconds. */
export interface TimePeriod {
  startMs: number;
  endMs: number;
}

const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;

const MONTH_NAMES = [
  'January', 'February', 'March', 'April', 'May', 'June',
  'July', 'August', 'September', 'October', 'November', 'December',
] as const;

/** Month index by lowercase name or abbreviation. */
const MONTH_INDEX: ReadonlyMap<string, number> = new Map([
  ['january', 0], ['jan', 0], ['february', 1], ['feb', 1], ['march', 2], ['mar', 2],
  ['april', 3], ['apr', 3], ['may', 4], ['june', 5], ['jun', 5], ['july', 6], ['jul', 6],
  ['august', 7], ['aug', 7], ['september', 8], ['sept', 8], ['sep', 8], ['october', 9], ['oct', 9],
  ['november', 10], ['nov', 10], ['december', 11], ['dec', 11],
]);
/** Weekday number (Sunday 0, as Date.getUTCDay) by lowercase name. */
const WEEKDAY_INDEX: ReadonlyMap<string, number> = new Map([
  ['sunday', 0], ['monday', 1], ['tuesday', 2], ['wednesday', 3], ['thursday', 4], ['friday', 5], ['saturday', 6],
]);
const COUNT_WORDS: ReadonlyMap<string, number> = new Map([
  ['a', 1], ['an', 1], ['one', 1], ['two', 2], ['three', 3], ['four', 4], ['five', 5], ['six', 6],
  ['seven', 7], ['eight', 8], ['nine', 9], ['ten', 10], ['eleven', 11], ['twelve', 12],
]);

const MONTH = String.raw`(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)`;
/** Full month names except "may", which is also the modal and needs context. */
const UNAMBIGUOUS_MONTH = String.raw`(?:january|february|march|april|june|july|august|september|october|november|december)`;
const WEEKDAY = String.raw`(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)`;
const ORDINAL = String.raw`(?:st|nd|rd|th)?`;
const COUNT = String.raw`(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)`;
const VAGUE_COUNT = String.raw`(?:a\s+couple(?:\s+of)?|a\s+few|few|several)`;
const UNIT = String.raw`(?:day|week|month|year)s?`;

const WHEN_QUESTION_PATTERNS: readonly RegExp[] = [
  /^\W*when\b/i,
  /\b(?:since|until|till|by)\s+when\b/i,
  /\b(?:what|which)\s+(?:year|month|date|day|week|weekend|decade|season|century)s?\b/i,
  /\bwhat\s+time\s+(?:did|does|do|is|was|were|will|would|are|has|had|of)\b/i,
  /\b(?:on|at)\s+what\s+(?:date|day|time|point)\b/i,
  /\bhow\s+long\b/i,
  /\bhow\s+(?:many|much)\s+(?:\w+\s+)?(?:years|months|weeks|days|hours|minutes|time)\b/i,
  /\bhow\s+(?:soon|recently)\b/i,
  /\bthe\s+date\s+(?:of|when|on)\b/i,
];

/** "When did…", "What year…", "How long ago…", "How many days passed…" and the like. */
export function isWhenQuestion(query: string): boolean {
  return WHEN_QUESTION_PATTERNS.some((pattern) => pattern.test(query));
}

/** Case-insensitive alternatives, joined into one pattern because one scan beats fifteen. */
const TIME_EXPRESSIONS: readonly string[] = [
  String.raw`\b(?:yesterday|today|tonight|tomorrow|ago|weekends?)\b`,
  String.raw`\b(?:${UNAMBIGUOUS_MONTH}|${WEEKDAY})\b`,
  String.raw`\b(?:19|20)\d{2}\b`,
  String.raw`\b(?:19|20)?\d0s\b`,
  String.raw`\b\d{1,2}\/\d{1,2}(?:\/\d{2,4})?\b|\b\d{1,2}[.-]\d{1,2}[.-](?:19|20)?\d{2}\b`,
  String.raw`\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)(?!\w)`,
  String.raw`\b\d{1,2}:\d{2}\b`,
  // Abbreviated months only next to a day number: "Jan 5", "5 Sept", not Jan the person.
  String.raw`\b${MONTH}\.?\s+\d{1,2}${ORDINAL}\b|\b\d{1,2}${ORDINAL}\s+(?:of\s+)?${MONTH}\b`,
  // "may" is the month after these words; "this may" is usually the modal.
  String.raw`\b(?:in|of|since|until|till|during|early|mid|late|last|next|every)[\s-]+may\b`,
  String.raw`\b(?:this|last|next|past|previous|coming|following|early|late)\s+` +
    String.raw`(?:morning|afternoon|evening|night|week|month|year|summer|winter|spring|fall|autumn|season|semester)s?\b`,
  String.raw`\b(?:the\s+)?(?:day|week|month|year|night)\s+(?:before|after|prior)\b`,
  // Not "a day": "have a nice day" says nothing about when.
  String.raw`\b(?:${COUNT}|${VAGUE_COUNT})\s+(?:more\s+)?(?:(?:week|month|year|hour|decade)s?|days)\b`,
  String.raw`\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten)\s+day\b`,
  String.raw`\b(?:in|during|over)\s+the\s+(?:summer|winter|spring|fall|autumn|holidays?)\b`,
  String.raw`\b(?:christmas|thanksgiving|halloween|easter|hanukkah|diwali|new\s+year'?s?|valentine'?s?\s+day)\b`,
  String.raw`\b(?:the\s+other\s+(?:day|night)|recently|lately)\b`,
  // The time since the speakers last talked: "since we last spoke", "since last time", "since our last chat".
  String.raw`\bsince\s+(?:(?:we|you|i)\s+last\s+(?:talked|spoke|chatted|met|saw|caught\s+up)|(?:the\s+)?last\s+time|our\s+last\s+(?:chat|talk|conversation|catch-?up))\b`,
];
const TIME_EXPRESSION = new RegExp(TIME_EXPRESSIONS.join('|'), 'i');
/** A capitalised "May" inside a sentence is the month, unless a subject follows ("…, May I ask"). */
const CAPITALISED_MAY =
  /(?<![.!?]\s*|^\s*)\bMay\b(?!\s+(?:I|you|we|he|she|it|they|the|this|that|there|be|not|have|all|your|our|God)\b)/;

/**
 * Every alternative needs a digit or one of these words. Most texts have neither, and this
 * literal scan is several times cheaper than trying every alternative at every position.
 */
const TIME_HINT = new RegExp(
  String.raw`\d|\b(?:yesterday|today|tonight|tomorrow|ago|weekends?|${UNAMBIGUOUS_MONTH}|${WEEKDAY}|may|` +
    String.raw`morning|afternoon|evening|nights?|days?|weeks?|months?|years?|hours?|decades?|` +
    String.raw`summer|winter|spring|fall|autumn|seasons?|semesters?|holidays?|` +
    String.raw`christmas|thanksgiving|halloween|easter|hanukkah|diwali|recently|lately|since)\b`,
  'i',
);

/**
 * Whether a text mentions a time: dates, years, month and weekday names, times of day, relative
 * expressions ("yesterday", "last week", "3 days ago", "a few weeks"), seasons and holidays.
 * "may" counts only where it reads as the month.
 */
export function hasTimeExpression(text: string): boolean {
  return TIME_HINT.test(text) && (TIME_EXPRESSION.test(text) || CAPITALISED_MAY.test(text));
}

function dayStart(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

function monthPeriod(year: number, month: number): TimePeriod {
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
function monthPart(year: number, month: number, part: string): TimePeriod {
  const monthEnd = monthPeriod(year, month).endMs;
  if (part === 'last week') return { startMs: monthEnd - WEEK_MS, endMs: monthEnd };
  const [first, last] = MONTH_PARTS.get(part)!;
  return { startMs: Date.UTC(year, month, first), endMs: Math.min(monthEnd, Date.UTC(year, month, last + 1)) };
}

/** The first, second… or last Saturday and Sunday of a month. */
function monthWeekend(year: number, month: number, which: string): TimePeriod {
  const firstSaturday = 1 + ((6 - new Date(Date.UTC(year, month, 1)).getUTCDay() + 7) % 7);
  const daysInMonth = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const nth = ORDINAL_INDEX.get(which)!;
  const saturday = nth > 0 ? firstSaturday + 7 * (nth - 1) : firstSaturday + 7 * Math.floor((daysInMonth - firstSaturday) / 7);
  const startMs = Date.UTC(year, month, saturday);
  return { startMs, endMs: startMs + 2 * DAY_MS };
}

/** Which weekend of a month; 0 is the last. */
const ORDINAL_INDEX: ReadonlyMap<string, number> = new Map([['first', 1], ['second', 2], ['third', 3], ['fourth', 4], ['last', 0]]);
const ORDINAL_WORDS: ReadonlyMap<string, string> = new Map([['1st', 'first'], ['2nd', 'second'], ['3rd', 'third'], ['4th', 'fourth']]);

function yearPeriod(year: number): TimePeriod {
  return { startMs: Date.UTC(year, 0, 1), endMs: Date.UTC(year + 1, 0, 1) };
}

function dayPeriod(year: number, month: number, day: number): TimePeriod | null {
  const startMs = Date.UTC(year, month, day);
  // Date.UTC rolls 31 June over to 1 July; a day that does not exist names no period.
  if (new Date(startMs).getUTCDate() !== day) return null;
  return { startMs, endMs: startMs + DAY_MS };
}

/**
 * A month or day named without a year is the latest one that has begun by the reference: a memory
 * question asks about the past, so "in August" asked in January means last August.
 */
function latestYearFor(month: number, day: number, reference: Date): number {
  const year = reference.getUTCFullYear();
  return Date.UTC(year, month, day) > reference.getTime() ? year - 1 : year;
}

function toCount(word: string): number {
  const lower = word.toLowerCase();
  return COUNT_WORDS.get(lower) ?? Number.parseInt(lower, 10);
}

/** The smallest and largest count a vague quantity stands for. */
function vagueRange(word: string): [number, number] {
  const lower = word.toLowerCase();
  if (lower.includes('couple')) return [2, 3];
  if (lower.includes('several')) return [3, 7];
  return [2, 5];
}

function unitMs(unit: string): number {
  const singular = unit.toLowerCase().replace(/s$/, '');
  if (singular === 'day') return DAY_MS;
  if (singular === 'week') return WEEK_MS;
  if (singular === 'month') return 30.44 * DAY_MS;
  return 365.25 * DAY_MS;
}

/** Meteorological seasons (northern hemisphere) by their first month; winter runs into the next year. */
const SEASON_START: ReadonlyMap<string, number> = new Map([
  ['spring', 2], ['summer', 5], ['autumn', 8], ['fall', 8], ['winter', 11],
]);
const SEASON = String.raw`(spring|summer|autumn|fall|winter)`;

/** The season that starts in `year` (winter 2023 is December 2023 to February 2024). */
function seasonPeriod(year: number, season: string): TimePeriod {
  const month = SEASON_START.get(season.toLowerCase())!;
  return { startMs: Date.UTC(year, month, 1), endMs: Date.UTC(year, month + 3, 1) };
}

/**
 * "last summer": the latest one over by the reference; "this summer": the one of the reference's
 * year (in January, this winter began in December); "in the summer": the latest one begun.
 */
function relativeSeason(which: string, season: string, reference: Date): TimePeriod {
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
function weekStart(reference: Date): number {
  const sinceMonday = (reference.getUTCDay() + 6) % 7;
  return dayStart(reference.getTime()) - sinceMonday * DAY_MS;
}

interface PeriodRule {
  readonly pattern: RegExp;
  /** Null when the words name no usable period (a 31 June, a date in the future). */
  readonly resolve: (match: RegExpMatchArray, reference: Date | null) => TimePeriod | null;
}

const YEAR = String.raw`((?:19|20)\d{2})`;
const YEAR_TEXT = String.raw`(?:19|20)\d{2}`;

/**
 * One calendar day in any spelling the rules read, as a single span for `dayFromText`: "8 May
 * 2023", "the 8th of May", "May 8th, 2023", "Dec 4", "2023-05-08", "12/25/2023", "25.12.2023".
 * Two-digit years only with slashes ("4/13/23"): with dots or dashes they read as scores and versions.
 * A month name ends at a word boundary: "4 decades" is not 4 December, "3 Marvel movies" not 3 March.
 */
const DAY_TEXT =
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
function dayFromText(text: string, reference: Date | null): TimePeriod | null {
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

/** Beginning, middle or end of a season or year: its first, middle or last third. */
function partThird(part: string): 0 | 1 | 2 {
  const lower = part.toLowerCase();
  if (lower === 'beginning' || lower === 'start' || lower === 'early') return 0;
  if (lower === 'middle' || lower === 'mid') return 1;
  return 2;
}

/** The first, middle or last third of a period of whole months (a season: one month; a year: four). */
function monthsThird(period: TimePeriod, third: 0 | 1 | 2): TimePeriod {
  const start = new Date(period.startMs);
  const months = Math.round((period.endMs - period.startMs) / (30.44 * DAY_MS));
  const size = months / 3;
  const year = start.getUTCFullYear();
  const month = start.getUTCMonth();
  return { startMs: Date.UTC(year, month + third * size, 1), endMs: Date.UTC(year, month + (third + 1) * size, 1) };
}

/** The Saturday (00:00) of the weekend after `dayMs`'s day (strictly), or the one before it ("the weekend before": over by then). */
function weekendNear(dayMs: number, direction: 'before' | 'after'): TimePeriod {
  const weekday = new Date(dayMs).getUTCDay();
  const saturday = direction === 'after' ? dayMs + ((6 - weekday + 7) % 7 || 7) * DAY_MS : dayMs - [8, 2, 3, 4, 5, 6, 7][weekday]! * DAY_MS;
  return { startMs: saturday, endMs: saturday + 2 * DAY_MS };
}

/**
 * "the Friday before 15 May", "the weekend after 3 June 2023", "the day before May 8", "the week
 * of 4 December": periods placed by a date. Read before the dates that only bound an event are
 * blanked, since these words are the same ("before 15 May").
 */
const DATE_RELATIVE_RULES: readonly PeriodRule[] = [
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
const PERIOD_RULES: readonly PeriodRule[] = [
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

function relativeDays(reference: Date | null, daysBack: number): TimePeriod | null {
  if (reference === null) return null;
  const startMs = dayStart(reference.getTime()) - daysBack * DAY_MS;
  return { startMs, endMs: startMs + DAY_MS };
}

/**
 * "3 days ago" is rarely exact: a day either side for days, half a unit either side otherwise.
 * Vague counts ("a few weeks ago") span their whole range.
 */
function agoPeriod(countWord: string, unit: string, reference: Date): TimePeriod {
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

function calendarPeriod(which: 'last' | 'this', unit: string, reference: Date): TimePeriod {
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

/** "8 May 2023" (UTC), the form lexical documents carry so a question naming the date can match it. */
export function formatReadableDate(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  const date = new Date(ms);
  return `${date.getUTCDate()} ${MONTH_NAMES[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
}

/** "2023-05-08 13:56" (UTC). */
export function formatStamp(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
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

/** Whether two half-open periods share any instant. */
export function periodsOverlap(a: TimePeriod, b: TimePeriod): boolean {
  return a.startMs < b.endMs && b.startMs < a.endMs;
}
