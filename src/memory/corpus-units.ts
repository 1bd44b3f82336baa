import type { EntityMention } from '../retrieval/entities/entity-mentions.js';
import type { CorpusUnit } from '../retrieval/corpus/corpus-types.js';
import type { TimePeriod } from '../retrieval/time-cues/calendar.js';
import { eventPeriod } from '../retrieval/time-cues/named-period.js';
import type { StoredRecord } from '../store/stored-record.js';
import { duplicateKey, NO_TAGS, shared, unitText, type SharedStrings } from './memory-records.js';
import { featuresOf, type UnitFeatures } from './unit-features.js';

/**
 * A stored record's unit: what retrieval's corpus holds of it (its fields, its vector and its
 * features, unit-features.ts). Its event period is resolved when first read, not at the load: only a
 * query naming a period reads it (the `eventPeriod` cue), and resolving it ran the time rules over
 * every text that says when at every cold load (about a tenth of a cold user's load, measured by
 * bench/cold-user-load.ts). The result is the same whenever it is read: the text and its date
 * never change for a unit (an update makes a new one).
 */
class RecordUnit implements CorpusUnit {
  readonly seq: number;
  vector: Float32Array | null;
  terms: readonly string[];
  readonly speaker: string | null;
  readonly sessionId: string | null;
  readonly messageKey: string | null;
  readonly timeMs: number;
  readonly importance: number;
  readonly tags: readonly string[];
  readonly hasTimeExpression: boolean;
  readonly isQuestion: boolean;
  readonly firstPerson: boolean;
  readonly textKey: string;
  readonly entities: readonly EntityMention[];
  /** The text whose event period is still to resolve; null once resolved, or when there is none to find. */
  private periodText: string | null;
  private period: TimePeriod | null;

  constructor(record: StoredRecord, vector: Float32Array | null, strings: SharedStrings | undefined, features: UnitFeatures) {
    const timeMs = unitText(record).timeMs;
    const speaker = record.role ? shared(strings, record.role.toLowerCase()) : null;
    const saysWhen = features.hasTimeExpression;
    const timed = Number.isFinite(timeMs);
    this.seq = record.seq;
    this.vector = vector;
    // Not shared: the BM25 index keeps one copy of each term (the first it is given), and admitUnits
    // lets the unit's list go once the index has it.
    this.terms = features.terms;
    this.speaker = speaker;
    this.sessionId = record.session_id ?? null;
    this.messageKey = record.request_id !== undefined && record.message_index !== undefined ? `${record.request_id}#${record.message_index}` : null;
    this.timeMs = timed ? timeMs : 0;
    this.importance = record.importance;
    this.tags = record.tags.length === 0 ? NO_TAGS : record.tags.map((tag) => tag.toLowerCase());
    this.hasTimeExpression = saysWhen;
    this.isQuestion = features.isQuestion;
    this.firstPerson = features.firstPerson;
    this.textKey = shared(strings, duplicateKey(record.text));
    this.entities = sharedEntities(features.entities, strings);
    // eventPeriod() finds nothing in a text that says no time or has no date to resolve it against.
    this.periodText = saysWhen && timed ? record.text : null;
    this.period = null;
  }

  get eventPeriod(): TimePeriod | null {
    if (this.periodText !== null) {
      this.period = eventPeriod(this.periodText, this.timeMs, true);
      this.periodText = null;
    }
    return this.period;
  }
}

/**
 * The corpus unit of a stored memory: its features read from `stored` (the record's `fx`, which
 * the caller has taken off the record) when they hold, derived otherwise. A load passes `strings`,
 * so that the user's units share equal speakers and mentions.
 */
export function corpusUnit(record: StoredRecord, vector: Float32Array | null, strings?: SharedStrings, stored?: unknown): CorpusUnit {
  return new RecordUnit(record, vector, strings, featuresOf(record, stored));
}

const NO_ENTITIES: readonly EntityMention[] = Object.freeze([]);

/**
 * Mentions equal in key, kind and confidence, kept once per load (a user's turns name the same
 * few people again and again): keyed by the load's shared strings, so that it goes with them.
 */
const sharedMentions = new WeakMap<SharedStrings, Map<string, EntityMention>>();

/** A unit's entity mentions; at a load, each one shared with the user's other units. */
function sharedEntities(mentions: readonly EntityMention[], strings: SharedStrings | undefined): readonly EntityMention[] {
  if (mentions.length === 0) return NO_ENTITIES;
  if (!strings) return mentions;
  let known = sharedMentions.get(strings);
  if (!known) sharedMentions.set(strings, (known = new Map()));
  return mentions.map((mention) => {
    const id = `${mention.kind}${mention.confident ? '+' : '?'}${mention.key}`;
    let kept = known.get(id);
    if (!kept) known.set(id, (kept = Object.freeze({ ...mention, key: shared(strings, mention.key), surface: shared(strings, mention.surface) })));
    return kept;
  });
}

