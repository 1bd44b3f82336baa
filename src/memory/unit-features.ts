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
 * a77c27a (reverted then, its derivation changed since): never read.
 */
export const FEATURES_VERSION = 2;

export interface UnitFeatures {
  /** Index terms in order, with repeats (BM25 counts them). */
  terms: string[];
  hasTimeExpression: boolean;
  isQuestion: boolean;
  firstPerson: boolean;
  entities: readonly EntityMention[];
}

/** The features as a record line holds them: short keys, flags in one number, mentions as tuples. */
export interface StoredFeatures {
  /** Fingerprint of FEATURES_VERSION and the inputs (`fingerprint`). */
  h: string;
  /** The terms joined by spaces (no term holds one): one string to parse, not one per term. */
  t: string;
  /** 1: a time expression; 2: a question; 4: first person. */
  f: number;
  /** Mentions as [kind, key, surface, confident 0/1]. */
  e?: Array<[EntityKind, string, string, 0 | 1]>;
}

const TIME = 1;
const QUESTION = 2;
const FIRST_PERSON = 4;
const KINDS: ReadonlySet<string> = new Set<EntityKind>(['person', 'title', 'name']);

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

/** The record with its features stored (`fx`), for a write. */
export function withStoredFeatures<T extends MemoryFields>(record: T): T & { fx?: StoredFeatures } {
  const features = deriveFeatures(record);
  // A term with a space could not be told from two (no analyzer term has one: this keeps it so).
  if (features.terms.some((term) => term.includes(' '))) return record;
  const stored: StoredFeatures = { h: fingerprint(record), t: features.terms.join(' '), f: (features.hasTimeExpression ? TIME : 0) | (features.isQuestion ? QUESTION : 0) | (features.firstPerson ? FIRST_PERSON : 0) };
  if (features.entities.length > 0) stored.e = features.entities.map((mention) => [mention.kind, mention.key, mention.surface, mention.confident ? 1 : 0]);
  return { ...record, fx: stored };
}

/**
 * The features stored with a record, when they are whole and were derived from this record by
 * this derivation; null otherwise (the caller derives them).
 */
export function readStoredFeatures(record: MemoryFields, stored: unknown): UnitFeatures | null {
  if (typeof stored !== 'object' || stored === null) return null;
  const { h, t, f, e } = stored as Partial<Record<keyof StoredFeatures, unknown>>;
  if (typeof h !== 'string' || typeof t !== 'string' || typeof f !== 'number') return null;
  let entities: EntityMention[] = [];
  if (e !== undefined) {
    if (!Array.isArray(e)) return null;
    for (const mention of e) {
      if (!Array.isArray(mention) || mention.length !== 4 || !KINDS.has(mention[0]) || typeof mention[1] !== 'string' || typeof mention[2] !== 'string') return null;
      entities.push({ key: mention[1], surface: mention[2], kind: mention[0] as EntityKind, confident: mention[3] === 1 });
    }
  }
  // Last, as the dearest check: the shape alone never vouches for the content.
  if (h !== fingerprint(record)) return null;
  return { terms: t === '' ? [] : t.split(' '), hasTimeExpression: (f & TIME) !== 0, isQuestion: (f & QUESTION) !== 0, firstPerson: (f & FIRST_PERSON) !== 0, entities };
}

/** The features of a record: the stored ones when they hold, derived otherwise. */
export function featuresOf(record: MemoryFields, stored: unknown): UnitFeatures {
  return (stored === undefined ? null : readStoredFeatures(record, stored)) ?? deriveFeatures(record);
}
