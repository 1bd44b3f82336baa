/**
 * The entities a text mentions, read from its capitalisation alone: a pure function of the text
 * (and its speaker), so that the same memories give the same index on every store and at every
 * load, and a unit test pins each rule.
 *
 * What counts as a mention:
 * - a capitalised word or run of them ("Melanie", "LGBTQ", "New York", "Bank of America") that
 *   is not the first word of a sentence: `confident`;
 * - the same at a sentence's start ("Melanie said…", "Yesterday I…"): not confident, so it counts
 *   only for a name the user's corpus knows from a confident mention (`EntityIndex`);
 * - a quoted capitalised title of up to eight words ("Charlotte's Web", “The Four Agreements”): `title`;
 * - the speaker of the turn, unless a generic role (user, assistant): `person`.
 * A run of several words is one mention and each of its words another ("Melanie Smith" is
 * "melanie smith", "melanie" and "smith"), so a question naming either finds it.
 *
 * Not used: wink-nlp's entities. Its English lite model finds dates, numbers, times, hashtags,
 * e-mails and URLs, no names; its part-of-speech tags do find proper nouns, at about 100 µs a
 * 150-character turn (measured), 10 s of cold load for 100,000 memories against well under one
 * for these expressions.
 */

/** How a mention was found; an entity known several ways shows the first of person, title, name. */
export type EntityKind = 'person' | 'title' | 'name';

export interface EntityMention {
  /** The entity as matched: lowercased, white space collapsed, a trailing possessive dropped. */
  key: string;
  /** As first written. */
  surface: string;
  kind: EntityKind;
  /** False at a sentence's start, where capitals say nothing by themselves. */
  confident: boolean;
}

/** Roles that name no person (the same as query-cues.ts's). */
const GENERIC_ROLES: ReadonlySet<string> = new Set(['user', 'assistant', 'system', 'human', 'ai', 'bot', 'tool', 'agent', 'model']);

/**
 * Capitalised words that are no name wherever they stand: the pronoun, the months and weekdays
 * (time cues read those), greetings and interjections people capitalise mid-text ("…, Wow!"),
 * and the function words a sentence-start or a title capitalises.
 */
const NEVER_NAMES: ReadonlySet<string> = new Set(
  `i i'm i've i'd i'll im ive id ill ok okay oh ah aw aww wow yes yeah yep no nope hey hi hello
  thanks thank lol omg haha hmm um uh please sorry congrats congratulations great good cool nice
  awesome amazing sure well so and but or if then the a an of in on at to for with by from as is
  it its it's that this these those there here what when where why how who which whose do does
  did can could would should will may might must have has had be was were are am my your our
  their his her he she we they you me us them him mine yours not just also very too really
  january february march april june july august september october november december
  monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays
  saturdays sundays today tomorrow yesterday tonight
  mon tue tues wed thu thur thurs fri sat bye yay woohoo hooray ugh ha
  mr mrs ms dr st`.split(/\s+/),
);


/** A capitalised word, not inside another ("McDonald" is one, the "D" of it none). */
const CAPITALISED_WORD = /(?<![\p{L}\p{M}\p{N}'’.-])\p{Lu}[\p{L}\p{M}\p{N}]*(?:['’.-][\p{L}\p{M}\p{N}]+)*/gu;
const CAPITALISED = /^\p{Lu}/u;
/** What may stand between two words of one name: white space, with up to two links ("of the"). */
const LINKED = /^\s+((?:(?:of|the|de|da|del|van|von|la|le|du|&)\s+){0,2})$/;
const OPENERS: ReadonlySet<string> = new Set(['"', '“', '(', '[', "'", '‘']);
const CLOSERS: ReadonlySet<string> = new Set(['"', '”', ')', ']', "'", '’']);
const ENDERS: ReadonlySet<string> = new Set(['.', '!', '?', '…']);
const PLAIN_WORD = /^[\p{L}\p{N}]+$/u;
const QUOTED = /["“]([^"“”\n]{1,80})["”]/g;
const POSSESSIVE = /['’]s$/i;
const MAX_TITLE_WORDS = 8;

/** The entity key of a written name: lowercased, white space collapsed, curly apostrophes straight, a possessive dropped. */
export function entityKey(name: string): string {
  // A single plain word, the usual case, costs no replacement.
  if (PLAIN_WORD.test(name)) return name.toLowerCase();
  return name.trim().replace(/\s+/g, ' ').replace(/’/g, "'").replace(POSSESSIVE, '').toLowerCase();
}

/** Every entity the text mentions, each key once (its most telling mention: confident over not, title over name). */
export function entityMentions(text: string, speaker?: string | null): EntityMention[] {
  const found = new Map<string, EntityMention>();
  const note = (mention: EntityMention): void => {
    if (mention.key === '' || NEVER_NAMES.has(mention.key)) return;
    const known = found.get(mention.key);
    if (!known || rank(mention) > rank(known)) found.set(mention.key, mention);
  };
  if (speaker) {
    const key = entityKey(speaker);
    if (!GENERIC_ROLES.has(key)) note({ key, surface: speaker.trim(), kind: 'person', confident: true });
  }
  if (text.includes('"') || text.includes('“')) for (const match of text.matchAll(QUOTED)) {
    const title = match[1].trim();
    const words = title.split(/\s+/);
    if (words.length <= MAX_TITLE_WORDS && CAPITALISED.test(title)) note({ key: entityKey(title), surface: title, kind: 'title', confident: true });
  }
  for (const run of capitalisedRuns(text)) {
    const surface = run.words.join(' ');
    note({ key: entityKey(surface), surface, kind: 'name', confident: !run.atSentenceStart || run.words.length > 1 });
    if (run.words.length > 1) {
      for (const [i, word] of run.words.entries()) {
        if (!CAPITALISED.test(word)) continue;
        note({ key: entityKey(word), surface: word.replace(POSSESSIVE, ''), kind: 'name', confident: !(run.atSentenceStart && i === 0) });
      }
    }
  }
  return [...found.values()];
}

function rank(mention: EntityMention): number {
  return (mention.confident ? 4 : 0) + (mention.kind === 'person' ? 2 : mention.kind === 'title' ? 1 : 0);
}

interface CapitalisedRun {
  words: string[];
  atSentenceStart: boolean;
}

/** Runs of capitalised words (joined by white space and the lowercase links of LINKED), a possessive ending one. */
function capitalisedRuns(text: string): CapitalisedRun[] {
  const runs: CapitalisedRun[] = [];
  let current: CapitalisedRun | null = null;
  let currentEnd = 0;
  // Only the capitalised words are visited: most of a text is lowercase.
  for (const match of text.matchAll(CAPITALISED_WORD)) {
    const word = match[0];
    const start = match.index;
    if (NEVER_NAMES.has(entityKey(word))) {
      if (current) runs.push(current);
      current = null;
      continue;
    }
    const links = current ? LINKED.exec(text.slice(currentEnd, start)) : null;
    if (current && links) {
      if (links[1]) current.words.push(...links[1].trim().split(/\s+/));
      current.words.push(word);
    } else {
      if (current) runs.push(current);
      current = { words: [word], atSentenceStart: opensSentence(text, start) };
    }
    currentEnd = start + word.length;
    if (POSSESSIVE.test(word)) {
      runs.push(current);
      current = null;
    }
  }
  if (current) runs.push(current);
  return runs;
}

/** Whether the word at `start` is a sentence's first: at the text's start, or after . ! ? … (and closing quotes), a line break, an opening quote or bracket. */
function opensSentence(text: string, start: number): boolean {
  let i = start - 1;
  while (i >= 0 && (text[i] === ' ' || text[i] === '\t')) i--;
  if (i < 0) return true;
  const before = text[i];
  if (before === '\n' || before === '\r' || OPENERS.has(before)) return true;
  while (i >= 0 && CLOSERS.has(text[i])) i--;
  return i >= 0 && ENDERS.has(text[i]) && i < start - 1;
}
