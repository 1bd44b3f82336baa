/** Whether a text says when: the cue a "when" question favours (see `when-question.ts`). */

import { COUNT, MONTH, ORDINAL, UNAMBIGUOUS_MONTH, VAGUE_COUNT, WEEKDAY } from './vocabulary.js';

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
