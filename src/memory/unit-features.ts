import { lexicalText } from '../ingest/message-units.js';
import { analyze } from '../retrieval/analyzer.js';
import { entityMentions, type EntityKind, type EntityMention } from '../retrieval/entities/entity-mentions.js';
import { isDistractorQuestion, speaksOfSelf } from '../retrieval/query-cues.js';
import { hasTimeExpression } from '../retrieval/time-cues/time-expression.js';
import type { MemoryFields } from '../domain/memory.js';
import { unitText } from './memory-records.js';

/**
 * What retrieval derives from a memory's text beyond its vector: its index terms and its cues
 * (a time expression, a question, first person, the entities it names). Deriving them is the
 * dearest part of making a loaded memory searchable (the analyzer, a dozen time-expression rules,
 * the entity finder: about half of a 20,000-memory user's load, measured by a CPU profile), which
 * a cold user's first Search and a start pay for every memory; so a write stores them in the
 * record as `fx` and a load reads them back instead.
 *
 * A stored set is used only when its fingerprint matches the record it is read with: a 64-bit
 * hash of FEATURES_VERSION and every input of the derivation (text, speaker, time, tags). So a
 * record whose text changed after its features were stored, one an older build wrote without
 * them, or one whose derivation this build does differently is derived again. FEATURES_VERSION
 * changes whenever the derivation's output does (test/memory/unit-features.test.ts holds a digest
 * of it over fixed texts and fails until it is bumped). Version 1 was written by builds 5f24138 to
 * a77c27a (reverted then, its derivation changed since), version 2 as an object (e7a9ca5): neither
 * is read.
 */
export const FEATURES_VERSION = 3;

export interface UnitFeatures {
  /** Index terms in order, with repeats (BM25 counts them). */
  terms: string[];
  hasTimeExpression: boolean;
  isQuestion: boolean;
  firstPerson: boolean;
  entities: readonly EntityMention[];
}

/**
 * The features as a record line holds them: one string, `<fingerprint: 14 characters><flags: one
 * digit> <the terms joined by spaces>`, then, when the text names entities, SEPARATOR and each
 * mention as `kind FIELD key FIELD surface FIELD 1|0` (confident), the mentions joined by
 * MENTION. One string rather than an object of arrays: a loaded line's features are held until
 * the user's corpus reads them, and a parsed object with its nested arrays took ~1.9 KB of heap a
 * memory against ~150 bytes for the string, and twice the parse time (20,000 lines of the scale
 * store, a scratch script). No term holds a space and no mention a control character of these.
 */
export type StoredFeatures = string;

const FINGERPRINT_LENGTH = 14;
const SEPARATOR = '\u001f';
const MENTION = '\u001e';
const FIELD = '\u001d';
const UNSAFE = /[\u001d-\u001f]/;

/** The derivation itself, from the record's text, speaker, time and tags. */
export function deriveFeatures(record: MemoryFields): UnitFeatures {
  const speaker = record.role ? record.role.toLowerCase() : null;
  // One scan of the text's time expressions serves the cues that read it.
  const saysWhen = hasTimeExpression(record.text);
  return {
    terms: analyze(lexicalText(unitText(record))),
    hasTimeExpression: saysWhen,
    isQuestion: isDistractorQuestion(record.text, speaker, saysWhen),
    firstPerson: speaksOfSelf(record.text),
    entities: entityMentions(record.text, record.role),
  };
}

/**
 * Every input of the derivation (text, speaker, time, tags) and the version of its code, hashed
 * to 64 bits in two lanes (FNV-1a and a multiply-xorshift): a change detector, run per memory at
 * every load, so a few hundred nanoseconds rather than a digest's microseconds.
 */
export function fingerprint(record: MemoryFields): string {
  const { text, role, timeMs, tags } = unitText(record);
  const lanes: [number, number] = [0x811c9dc5 ^ FEATURES_VERSION, 0x5bd1e995 ^ FEATURES_VERSION];
  mix(lanes, text);
  mix(lanes, role ?? '');
  mix(lanes, String(timeMs));
  for (const tag of tags ?? []) mix(lanes, tag);
  // Fixed width, so that a line's length does not vary with its hash.
  return `${(lanes[0] >>> 0).toString(36).padStart(7, '0')}${(lanes[1] >>> 0).toString(36).padStart(7, '0')}`;
}

/** Each of the value's code units into both lanes, then a separator (so "ab","c" is not "a","bc"). */
function mix(lanes: [number, number], value: string): void {
  let [a, b] = lanes;
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    a = Math.imul(a ^ code, 0x01000193);
    b = Math.imul(b ^ code, 0x5bd1e995);
    b ^= b >>> 15;
  }
  lanes[0] = Math.imul(a ^ 0xffff, 0x01000193);
  lanes[1] = Math.imul(b ^ 0xffff, 0x5bd1e995);
}

const TIME = 1;
const QUESTION = 2;
const FIRST_PERSON = 4;
const KINDS: ReadonlySet<string> = new Set<EntityKind>(['person', 'title', 'name']);

/** The record with its features stored (`fx`), for a write. */
export function withStoredFeatures<T extends MemoryFields>(record: T): T & { fx?: StoredFeatures } {
  const features = deriveFeatures(record);
  // A term with a space could not be told from two, nor a mention holding a separator from two
  // (no analyzer term or entity finder's mention has one: this keeps it so).
  if (features.terms.some((term) => term.includes(' ') || UNSAFE.test(term))) return record;
  if (features.entities.some((mention) => UNSAFE.test(mention.key) || UNSAFE.test(mention.surface))) return record;
  const flags = (features.hasTimeExpression ? TIME : 0) | (features.isQuestion ? QUESTION : 0) | (features.firstPerson ? FIRST_PERSON : 0);
  let stored = `${fingerprint(record)}${flags} ${features.terms.join(' ')}`;
  if (features.entities.length > 0) {
    stored += SEPARATOR + features.entities.map((mention) => [mention.kind, mention.key, mention.surface, mention.confident ? '1' : '0'].join(FIELD)).join(MENTION);
  }
  return { ...record, fx: stored };
}

/**
 * The features stored with a record, when they are whole and were derived from this record by
 * this derivation; null otherwise (the caller derives them).
 */
export function readStoredFeatures(record: MemoryFields, stored: unknown): UnitFeatures | null {
  if (typeof stored !== 'string' || stored.length <= FINGERPRINT_LENGTH + 1 || stored.charCodeAt(FINGERPRINT_LENGTH + 1) !== 32) return null;
  const flags = stored.charCodeAt(FINGERPRINT_LENGTH) - 48;
  if (flags < 0 || flags > 7) return null;
  const mentionsAt = stored.indexOf(SEPARATOR, FINGERPRINT_LENGTH + 2);
  const terms = stored.slice(FINGERPRINT_LENGTH + 2, mentionsAt === -1 ? stored.length : mentionsAt);
  const entities = mentionsAt === -1 ? [] : readMentions(stored, mentionsAt + 1);
  if (entities === null) return null;
  // Last, as the dearest check: the shape alone never vouches for the content.
  if (stored.slice(0, FINGERPRINT_LENGTH) !== fingerprint(record)) return null;
  return { terms: terms === '' ? [] : terms.split(' '), hasTimeExpression: (flags & TIME) !== 0, isQuestion: (flags & QUESTION) !== 0, firstPerson: (flags & FIRST_PERSON) !== 0, entities };
}

/**
 * The mentions stored from `from` on: each `kind FIELD key FIELD surface FIELD 1|0`, joined by
 * MENTION; null when one is not of that shape. Found by `indexOf` rather than two levels of
 * `split` (2.3 against 0.8 µs a memory of LoCoMo turns, a scratch loop: a load does it for each).
 */
function readMentions(stored: string, from: number): EntityMention[] | null {
  const entities: EntityMention[] = [];
  for (let at = from; ; ) {
    const next = stored.indexOf(MENTION, at);
    const end = next === -1 ? stored.length : next;
    const afterKind = stored.indexOf(FIELD, at);
    const afterKey = afterKind === -1 ? -1 : stored.indexOf(FIELD, afterKind + 1);
    const afterSurface = afterKey === -1 ? -1 : stored.indexOf(FIELD, afterKey + 1);
    // Three fields then one character, all before the mention's end.
    if (afterSurface === -1 || afterSurface + 2 !== end) return null;
    const kind = stored.slice(at, afterKind);
    const confident = stored.charCodeAt(afterSurface + 1);
    if (!KINDS.has(kind) || (confident !== 49 && confident !== 48)) return null;
    entities.push({ key: stored.slice(afterKind + 1, afterKey), surface: stored.slice(afterKey + 1, afterSurface), kind: kind as EntityKind, confident: confident === 49 });
    if (next === -1) return entities;
    at = next + 1;
  }
}

/** The features of a record: the stored ones when they hold, derived otherwise. */
export function featuresOf(record: MemoryFields, stored: unknown): UnitFeatures {
  return (stored === undefined ? null : readStoredFeatures(record, stored)) ?? deriveFeatures(record);
}
