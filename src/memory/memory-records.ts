import { lexicalText, standaloneContent, type UnitText } from '../ingest/message-units.js';
import { analyze } from '../retrieval/analyzer.js';
import { entityMentions, type EntityMention } from '../retrieval/entities/entity-mentions.js';
import { isDistractorQuestion, speaksOfSelf } from '../retrieval/query-cues.js';
import { eventPeriod } from '../retrieval/time-cues/named-period.js';
import { hasTimeExpression } from '../retrieval/time-cues/time-expression.js';
import type { CorpusUnit } from '../retrieval/corpus/corpus-types.js';
import type { TimePeriod } from '../retrieval/time-cues/calendar.js';
import type { StoredRecord } from '../store/stored-record.js';
import type { Memory, MemoryFields } from '../domain/memory.js';

/** The unit a stored memory was made from: its text, speaker, time and tags. */
export function unitText(record: MemoryFields): UnitText {
  return {
    text: record.text,
    role: record.role,
    timeMs: Date.parse(record.occurred_at ?? record.created_at),
    tags: record.tags,
  };
}

/**
 * Equal strings of one user's memories, kept once: each parsed line brings its own copy of the
 * user id, the model, the Add's request id and dates.
 */
export type SharedStrings = Map<string, string>;

/** The empty tag list of every memory without tags (frozen: records are replaced, never changed). */
const NO_TAGS = Object.freeze([]) as unknown as string[];

function shared(strings: SharedStrings | undefined, value: string): string {
  if (!strings) return value;
  const known = strings.get(value);
  if (known !== undefined) return known;
  strings.set(value, value);
  return value;
}

/** Makes a loaded record share its repeated strings with the user's other records. */
export function compactRecord(record: StoredRecord, strings: SharedStrings): void {
  record.user_id = shared(strings, record.user_id);
  record.source = shared(strings, record.source);
  record.created_at = shared(strings, record.created_at);
  if (record.session_id !== undefined) record.session_id = shared(strings, record.session_id);
  if (record.role !== undefined) record.role = shared(strings, record.role);
  if (record.occurred_at !== undefined) record.occurred_at = shared(strings, record.occurred_at);
  if (record.request_id !== undefined) record.request_id = shared(strings, record.request_id);
  if (record.agent_id !== undefined) record.agent_id = shared(strings, record.agent_id);
  if (record.run_id !== undefined) record.run_id = shared(strings, record.run_id);
  if (record.model !== undefined) record.model = shared(strings, record.model);
  if (record.tags.length === 0) record.tags = NO_TAGS;
}

/**
 * A stored record's unit. Its event period is resolved when first read, not at the load: only a
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

  constructor(record: StoredRecord, vector: Float32Array | null, strings: SharedStrings | undefined) {
    const text = unitText(record);
    const speaker = record.role ? shared(strings, record.role.toLowerCase()) : null;
    // Not shared: the BM25 index keeps one copy of each term (the first it is given), and admitUnits
    // lets the unit's list go once the index has it.
    const terms = analyze(lexicalText(text));
    // One scan of the text's time expressions serves the three cues that read it (this runs per unit at every load).
    const saysWhen = hasTimeExpression(record.text);
    const timed = Number.isFinite(text.timeMs);
    this.seq = record.seq;
    this.vector = vector;
    this.terms = terms;
    this.speaker = speaker;
    this.sessionId = record.session_id ?? null;
    this.messageKey = record.request_id !== undefined && record.message_index !== undefined ? `${record.request_id}#${record.message_index}` : null;
    this.timeMs = timed ? text.timeMs : 0;
    this.importance = record.importance;
    this.tags = record.tags.length === 0 ? NO_TAGS : record.tags.map((tag) => tag.toLowerCase());
    this.hasTimeExpression = saysWhen;
    this.isQuestion = isDistractorQuestion(record.text, speaker, saysWhen);
    this.firstPerson = speaksOfSelf(record.text);
    this.textKey = shared(strings, duplicateKey(record.text));
    this.entities = unitEntities(record, strings);
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

export function corpusUnit(record: StoredRecord, vector: Float32Array | null, strings?: SharedStrings): CorpusUnit {
  return new RecordUnit(record, vector, strings);
}

const NO_ENTITIES: readonly EntityMention[] = Object.freeze([]);

/**
 * Mentions equal in key, kind and confidence, kept once per load (a user's turns name the same
 * few people again and again): keyed by the load's shared strings, so that it goes with them.
 */
const sharedMentions = new WeakMap<SharedStrings, Map<string, EntityMention>>();

/** The record's entity mentions; at a load, each one shared with the user's other units. */
function unitEntities(record: StoredRecord, strings: SharedStrings | undefined): readonly EntityMention[] {
  const mentions = entityMentions(record.text, record.role);
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

/** White space that trimming and collapsing would change: at either end, other than a space, or a run. */
const SPACING_TO_COLLAPSE = /^\s|\s$|[^\S ]|  /;

/** What makes two memories the same text for the answers: trimmed, white space collapsed, any case. */
export function duplicateKey(text: string): string {
  // Most texts are spaced already: a test is cheaper than a replacement that rebuilds the string.
  return SPACING_TO_COLLAPSE.test(text) ? text.trim().replace(/\s+/g, ' ').toLowerCase() : text.toLowerCase();
}

/** A record's standalone content, built once: a record is replaced, never changed, so it cannot go stale. */
const contentCache = new WeakMap<StoredRecord, string>();

export function hitContent(record: StoredRecord): string {
  let content = contentCache.get(record);
  if (content === undefined) contentCache.set(record, (content = standaloneContent(unitText(record))));
  return content;
}

/**
 * The record as the doors show it: every field in the record's own order but the store's. A loop,
 * not a rest destructuring: V8 runs `{ seq, ...memory } = record` through a runtime call, 4.6 µs a
 * record against 0.3 (measured), and a Search builds up to a hundred of these.
 */
export function publicMemory(record: StoredRecord): Memory {
  const memory: Record<string, unknown> = {};
  for (const key in record) {
    if (key === 'seq' || key === 'batch' || key === 'batch_id' || key === 'vec' || key === 'model' || key === 'history' || key === 'fx') continue;
    memory[key] = record[key as keyof StoredRecord];
  }
  memory.version = record.version ?? 1;
  memory.updated_at = record.updated_at ?? record.created_at;
  memory.metadata = record.metadata ?? {};
  return memory as unknown as Memory;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** When a memory was last written (an update counts as new), Unix ms. */
export function memoryTime(memory: Pick<Memory, 'updated_at' | 'created_at'>): number {
  return Date.parse(memory.updated_at ?? memory.created_at);
}
