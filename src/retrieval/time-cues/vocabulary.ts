/** The words the time cues read, as lookups and as pattern fragments the rules compose. */

/** Month index by lowercase name or abbreviation. */
export const MONTH_INDEX: ReadonlyMap<string, number> = new Map([
  ['january', 0], ['jan', 0], ['february', 1], ['feb', 1], ['march', 2], ['mar', 2],
  ['april', 3], ['apr', 3], ['may', 4], ['june', 5], ['jun', 5], ['july', 6], ['jul', 6],
  ['august', 7], ['aug', 7], ['september', 8], ['sept', 8], ['sep', 8], ['october', 9], ['oct', 9],
  ['november', 10], ['nov', 10], ['december', 11], ['dec', 11],
]);
/** Weekday number (Sunday 0, as Date.getUTCDay) by lowercase name. */
export const WEEKDAY_INDEX: ReadonlyMap<string, number> = new Map([
  ['sunday', 0], ['monday', 1], ['tuesday', 2], ['wednesday', 3], ['thursday', 4], ['friday', 5], ['saturday', 6],
]);
export const COUNT_WORDS: ReadonlyMap<string, number> = new Map([
  ['a', 1], ['an', 1], ['one', 1], ['two', 2], ['three', 3], ['four', 4], ['five', 5], ['six', 6],
  ['seven', 7], ['eight', 8], ['nine', 9], ['ten', 10], ['eleven', 11], ['twelve', 12],
]);

export const MONTH = String.raw`(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)`;
/** Full month names except "may", which is also the modal and needs context. */
export const UNAMBIGUOUS_MONTH = String.raw`(?:january|february|march|april|june|july|august|september|october|november|december)`;
export const WEEKDAY = String.raw`(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)`;
export const ORDINAL = String.raw`(?:st|nd|rd|th)?`;
export const COUNT = String.raw`(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)`;
export const VAGUE_COUNT = String.raw`(?:a\s+couple(?:\s+of)?|a\s+few|few|several)`;
export const UNIT = String.raw`(?:day|week|month|year)s?`;

/** Which weekend of a month; 0 is the last. */
export const ORDINAL_INDEX: ReadonlyMap<string, number> = new Map([['first', 1], ['second', 2], ['third', 3], ['fourth', 4], ['last', 0]]);
export const ORDINAL_WORDS: ReadonlyMap<string, string> = new Map([['1st', 'first'], ['2nd', 'second'], ['3rd', 'third'], ['4th', 'fourth']]);

export function toCount(word: string): number {
  const lower = word.toLowerCase();
  return COUNT_WORDS.get(lower) ?? Number.parseInt(lower, 10);
}

/** The smallest and largest count a vague quantity stands for. */
export function vagueRange(word: string): [number, number] {
  const lower = word.toLowerCase();
  if (lower.includes('couple')) return [2, 3];
  if (lower.includes('several')) return [3, 7];
  return [2, 5];
}

/** Meteorological seasons (northern hemisphere) by their first month; winter runs into the next year. */
export const SEASON_START: ReadonlyMap<string, number> = new Map([
  ['spring', 2], ['summer', 5], ['autumn', 8], ['fall', 8], ['winter', 11],
]);
export const SEASON = String.raw`(spring|summer|autumn|fall|winter)`;

export const YEAR = String.raw`((?:19|20)\d{2})`;
export const YEAR_TEXT = String.raw`(?:19|20)\d{2}`;
