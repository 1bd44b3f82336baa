/**
 * Text → BM25 index terms, and sentence splitting.
 *
 * Terms are lowercased Porter2 stems (wink's stemmer) with wink's English stop words removed.
 * The tokenizer is a single regular expression rather than wink's own: wink's readDoc costs about
 * 40 µs for a 160-character turn even with an empty pipe, which puts 100k units at 4 s, and
 * analyze() runs on every stored unit at load time. The stop list is wink's (what its.stopWordFlag
 * reports for the model's lexicon), frozen here so that analyzing needs no wink document at all;
 * test/retrieval/analyzer.test.ts checks it against wink.
 */
import { createRequire } from 'node:module';
import type winkNLP from 'wink-nlp';

/** Bump whenever analyze() can return different terms for the same text: indexes cache its output. */
export const ANALYZER_VERSION = 'analyzer-1';

const require = createRequire(import.meta.url);

/**
 * The model's Porter2 stemmer on its own (the very module the model hands out as `addons.stem`,
 * test/retrieval/analyzer.test.ts checks): the model itself costs ~150 ms and ~19 MB of RSS to load
 * and only sentence detection needs it, so a process that only searches never loads it.
 */
const stemWord = require('wink-eng-lite-web-model/dist/porter-stemmer.js') as (word: string) => string;
if (typeof stemWord !== 'function') {
  throw new Error('wink-eng-lite-web-model no longer provides dist/porter-stemmer.js (the Porter2 stemmer)');
}

/**
 * wink-eng-lite-web-model 1.8.1's stop words, minus "may": as the month it is the whole point of
 * a question like "what did she do in May?", so the analyzer decides from context instead.
 */
const STOP_WORDS: ReadonlySet<string> = new Set(
  `a about above abt across after afterwards again against ai all almost alone along already also
  although always am among amongst amount an and another any anyhow anyone anything anyway anywhere
  are around as at back bcoz be became because become becomes becoming been before beforehand behind
  being below beside besides between beyond both bottom but by ca cai call can cd could cuz da das
  did dis do does doin doing done down due during each eight either eleven else elsewhere empty
  enough etc even ever every everyone everywhere except few fifteen fifty first five for former
  formerly forty four from front full further get give go had has have he hence her here hereafter
  hereby herein hereupon hers herself him himself his how however hundred i ie if in inc indeed into
  is it its itself just keep last latter latterly least less ll made make many me meanwhile might
  mine more moreover most mostly move much must my myself nah name namely neither never nevertheless
  next nine no nobody none nope nor not nothing now nowhere nt of off often on once one only onto or
  other otherwise our ours ourselves out over own part per perhaps please pls plz put quite rather
  re really regarding same say see seem seemed seeming seems serious seven several shd she should
  show side since six sixty so some somehow someone something sometime sometimes somewhere still
  such take ten than that the their them themselves then thence there thereafter thereby therefore
  therein these they third this those though three through throughout thru thus to together too top
  toward towards twelve twenty two under unless until up upon us used using various ve very via was
  we well were what whatever when whence whenever where whereas whereby wherein wherever whether
  which while who whoever whole whom whose why will with within without wo would woz wtv yet you
  your yours yourself yourselves`.split(/\s+/),
);

/** Exported for the parity test against wink's own flags; not part of the analyzer's contract. */
export const WINK_STOP_WORDS_WITHOUT_MAY = STOP_WORDS;

/*
 * Alternatives, tried in order at each position: URL, e-mail address, dotted acronym ("U.S.",
 * "p.m."), then a word. A word may continue through an apostrophe followed by letters ("don't",
 * "Caroline's") and through . , : / - between two digits, so "3.5pm", "5,000", "13:56",
 * "5/12" and "2022-05-08" each stay one token while "covid-19" and "self-care" split.
 */
const FULL_TOKEN =
  /(?:https?:\/\/|www\.)[^\s<>"'()[\]{}]+|[\p{L}\p{N}._%+-]+@[\p{L}\p{N}-]+(?:\.[\p{L}\p{N}-]+)+|\p{L}(?:\.\p{L})+\.?(?![\p{L}\p{N}])|[\p{L}\p{N}][\p{L}\p{M}\p{N}]*(?:['’][\p{L}\p{M}]+|(?<=\p{N})[.,:/-](?=\p{N})[\p{L}\p{M}\p{N}]+)*/gu;
// Most texts hold neither a URL nor an address; skipping those alternatives roughly halves the scan.
const PLAIN_TOKEN =
  /\p{L}(?:\.\p{L})+\.?(?![\p{L}\p{N}])|[\p{L}\p{N}][\p{L}\p{M}\p{N}]*(?:['’][\p{L}\p{M}]+|(?<=\p{N})[.,:/-](?=\p{N})[\p{L}\p{M}\p{N}]+)*/gu;

const DIGIT = /\p{N}/u;
const URL_START = /^(?:https?:\/\/|www\.)/i;
const URL_TRAILING_PUNCTUATION = /[.,;:!?]+$/;
const THOUSANDS = /^\d{1,3}(?:,\d{3})+(?:\.\d+)?$/;
/** A number glued to a unit or am/pm: "3.5pm", "2.5km", "100k" (but not "1990s", "3rd"). */
const NUMBER_WITH_UNIT = /^([\d.,:/-]*\d)(\p{L}+)$/u;
const KEPT_NUMBER_SUFFIXES: ReadonlySet<string> = new Set(['s', 'st', 'nd', 'rd', 'th']);
const CLOCK_SUFFIXES: ReadonlySet<string> = new Set(['am', 'pm']);

/** Clitics whose host word carries the meaning: "Caroline's" → caroline, "I'm" → i. */
const CLITICS: ReadonlySet<string> = new Set(['s', 'm', 're', 've', 'll', 'd']);
/** Hosts of "n't" that are not words by themselves. */
const NEGATED_HOSTS: ReadonlyMap<string, string> = new Map([['ca', 'can'], ['wo', 'will'], ['sha', 'shall'], ['ai', 'am']]);

/**
 * Words that name a month or weekday only in a date-like context: "May" the month vs "may" the
 * modal, "Jan" the month vs Jan the person, "sat"/"sun"/"wed". Mapped to the full name so that
 * "Jan 5" and "January" share a term; in other contexts "may" is dropped as the stop word it is
 * and the others stay ordinary words.
 */
const CALENDAR_ABBREVIATIONS: ReadonlyMap<string, string> = new Map([
  ['may', 'may'],
  ['jan', 'january'],
  ['feb', 'february'],
  ['mar', 'march'],
  ['apr', 'april'],
  ['jun', 'june'],
  ['jul', 'july'],
  ['aug', 'august'],
  ['sep', 'september'],
  ['sept', 'september'],
  ['oct', 'october'],
  ['nov', 'november'],
  ['dec', 'december'],
  ['mon', 'monday'],
  ['tue', 'tuesday'],
  ['tues', 'tuesday'],
  ['wed', 'wednesday'],
  ['thu', 'thursday'],
  ['thur', 'thursday'],
  ['thurs', 'thursday'],
  ['fri', 'friday'],
  ['sat', 'saturday'],
  ['sun', 'sunday'],
]);
/** Words before a calendar word that make it a date. Not "to" or "this": "to wed", "this may be". */
const DATE_PREPOSITIONS: ReadonlySet<string> = new Set([
  'in', 'of', 'on', 'since', 'until', 'till', 'by', 'from', 'through', 'during', 'before', 'after',
  'early', 'mid', 'late', 'last', 'next', 'every',
]);
/** Words after a capitalised "May" that make it the modal ("May I ask…", "May you be happy"). */
const MODAL_MAY_FOLLOWERS: ReadonlySet<string> = new Set([
  'i', 'you', 'we', 'he', 'she', 'it', 'they', 'this', 'that', 'these', 'those', 'there', 'the',
  'be', 'not', 'have', 'also', 'well', 'all', 'your', 'our', 'god',
]);

/** Marks a token whose term depends on its neighbours (see CALENDAR_ABBREVIATIONS, am/pm). */
const NEEDS_CONTEXT = Symbol('needs context');
type TokenTerms = readonly string[] | typeof NEEDS_CONTEXT;
const NO_TERMS: readonly string[] = Object.freeze([]);

/*
 * Token → terms memo. Stemming is the costly step (a dozen regular expressions per word) and a
 * conversation reuses a small vocabulary, so most tokens hit. Cleared when full rather than LRU:
 * cheaper, and the cost of a refill is bounded by the limit.
 */
const MEMO_LIMIT = 1 << 18;
const memo = new Map<string, TokenTerms>();

function remember(token: string, terms: TokenTerms): TokenTerms {
  if (memo.size >= MEMO_LIMIT) memo.clear();
  memo.set(token, terms);
  return terms;
}

/** Longer "words" are not language (hashes, runs of letters); stemming time grows with the square of a word's length. */
const MAX_STEMMED_LENGTH = 64;

function wordTerms(word: string): readonly string[] {
  if (word.length === 0 || STOP_WORDS.has(word)) return NO_TERMS;
  return [word.length > MAX_STEMMED_LENGTH ? word : stemWord(word)];
}

/** Lowercased word without dots (acronyms) and without its clitics. */
function normaliseWord(token: string): string {
  let word = token.toLowerCase();
  if (word.includes('.')) word = word.replaceAll('.', '');
  if (!word.includes("'") && !word.includes('’')) return word;
  const parts = word.replaceAll('’', "'").split("'");
  // Clitics stack ("shouldn't've", "I'd've"): peel them from the end, then the negation.
  while (parts.length > 1 && CLITICS.has(parts[parts.length - 1]!)) parts.pop();
  if (parts.length === 2 && parts[1] === 't' && parts[0]!.endsWith('n')) {
    const host = parts[0]!.slice(0, -1);
    return NEGATED_HOSTS.get(host) ?? host;
  }
  // "o'clock", "y'all": no clitic left to drop, so the apostrophe is spelling.
  return parts.join('');
}

function splitNumber(value: string, terms: string[]): void {
  if (!value.includes(',')) {
    terms.push(value);
  } else if (THOUSANDS.test(value)) {
    terms.push(value.replaceAll(',', ''));
  } else {
    for (const part of value.split(',')) if (part.length > 0) terms.push(part);
  }
}

/**
 * Tokens holding a digit are kept verbatim: Porter2 treats digits as letters ("2023" → "202i").
 * A number glued to a unit is split so "2.5km" meets "2.5 km"; am/pm is dropped because
 * "1:56 pm" and "1:56pm" should agree and the number already carries the time.
 */
function numberTerms(token: string): readonly string[] {
  const value = token.toLowerCase().replace(/['’]/g, '');
  const terms: string[] = [];
  const glued = NUMBER_WITH_UNIT.exec(value);
  if (glued !== null && !KEPT_NUMBER_SUFFIXES.has(glued[2]!)) {
    splitNumber(glued[1]!, terms);
    if (!CLOCK_SUFFIXES.has(glued[2]!)) terms.push(...wordTerms(glued[2]!));
  } else {
    splitNumber(value, terms);
  }
  return terms;
}

function classify(token: string): TokenTerms {
  if (URL_START.test(token)) return [token.toLowerCase().replace(URL_TRAILING_PUNCTUATION, '')];
  if (token.includes('@')) return [token.toLowerCase()];
  if (DIGIT.test(token)) return numberTerms(token);
  const word = normaliseWord(token);
  if (CALENDAR_ABBREVIATIONS.has(word) || CLOCK_SUFFIXES.has(word)) return NEEDS_CONTEXT;
  return wordTerms(word);
}

function startsWithDigit(token: string | undefined): boolean {
  if (token === undefined) return false;
  const code = token.charCodeAt(0);
  return code >= 48 && code <= 57;
}

function contextualTerms(tokens: readonly string[], index: number): readonly string[] {
  const token = tokens[index]!;
  const word = normaliseWord(token);
  const previous = tokens[index - 1];
  const next = tokens[index + 1];
  if (CLOCK_SUFFIXES.has(word)) return startsWithDigit(previous) ? NO_TERMS : wordTerms(word);

  const datelike =
    startsWithDigit(previous) ||
    startsWithDigit(next) ||
    (previous !== undefined && DATE_PREPOSITIONS.has(previous.toLowerCase()));
  if (datelike) return wordTerms(CALENDAR_ABBREVIATIONS.get(word)!);
  if (word === 'may') {
    const modal = !token.startsWith('M') || (next !== undefined && MODAL_MAY_FOLLOWERS.has(next.toLowerCase()));
    return modal ? NO_TERMS : wordTerms('may');
  }
  return wordTerms(word);
}

/**
 * Index terms of a text, in order and with repeats (callers count term frequency from them).
 * Lowercased; punctuation, symbols, emoji, clitics and stop words dropped; words Porter2-stemmed;
 * tokens holding digits kept verbatim. The same function must analyze documents and queries.
 */
export function analyze(text: string): string[] {
  const pattern = text.includes('@') || text.includes('://') || text.includes('www.') ? FULL_TOKEN : PLAIN_TOKEN;
  const tokens = text.match(pattern);
  const terms: string[] = [];
  if (tokens === null) return terms;
  for (let i = 0; i < tokens.length; i += 1) {
    const token = tokens[i]!;
    const known = memo.get(token) ?? remember(token, classify(token));
    const tokenTerms = known === NEEDS_CONTEXT ? contextualTerms(tokens, i) : known;
    for (let j = 0; j < tokenTerms.length; j += 1) terms.push(tokenTerms[j]!);
  }
  return terms;
}

type WinkNlp = ReturnType<typeof winkNLP>;
let sentenceReader: WinkNlp | undefined;

/**
 * wink-nlp with its model, loaded and built at the first sentence split (an Add's): ~150 ms and
 * ~19 MB of RSS to load the model, ~180 ms and ~33 MB more to build the reader (2-vCPU dev VM),
 * none of which analyze() needs.
 */
function sentenceNlp(): WinkNlp {
  sentenceReader ??= (require('wink-nlp') as typeof winkNLP)(require('wink-eng-lite-web-model') as Parameters<typeof winkNLP>[0], ['sbd']);
  return sentenceReader;
}

const ENDS_WITH_DIGIT_AND_DOT = /\p{N}\.$/u;
const STARTS_WITH_DIGIT = /^\p{N}/u;

/**
 * Sentences of a text by wink-nlp's sentence detection, trimmed, never empty. wink tokenizes
 * "at 3.5pm" as "3" "." "5pm" and then ends a sentence at that dot; such a split (a digit and a
 * dot, no space, a digit) is joined back.
 */
export function splitSentences(text: string): string[] {
  if (text.trim().length === 0) return [];
  const detected = sentenceNlp().readDoc(text).sentences().out();
  const sentences: string[] = [];
  let cursor = 0;
  let previousEnd = -1;
  for (const raw of detected) {
    const sentence = raw.trim();
    if (sentence.length === 0) continue;
    const start = text.indexOf(sentence, cursor);
    const glued = start >= 0 && start === previousEnd;
    if (start >= 0) {
      cursor = start + sentence.length;
      previousEnd = cursor;
    } else {
      previousEnd = -1;
    }
    const last = sentences.length - 1;
    if (glued && last >= 0 && ENDS_WITH_DIGIT_AND_DOT.test(sentences[last]!) && STARTS_WITH_DIGIT.test(sentence)) {
      sentences[last] += sentence;
    } else {
      sentences.push(sentence);
    }
  }
  return sentences;
}
