import { lexicalText, standaloneContent, type UnitText } from '../ingest/message-units.js';
import { analyze } from '../retrieval/analyzer.js';
import { isDistractorQuestion } from '../retrieval/query-cues.js';
import { eventPeriod, hasTimeExpression } from '../retrieval/time-cues.js';
import type { CorpusUnit } from '../retrieval/user-corpus.js';
import type { StoredRecord } from '../store/stored-record.js';
import type { Memory } from './types.js';

/** The unit a stored memory was made from: its text, speaker, time and tags. */
export function unitText(record: Memory): UnitText {
  return {
    text: record.text,
    role: record.role,
    timeMs: Date.parse(record.occurred_at ?? record.created_at),
    tags: record.tags,
  };
}

export function corpusUnit(record: StoredRecord, vector: Float32Array): CorpusUnit {
  const text = unitText(record);
  const speaker = record.role ? record.role.toLowerCase() : null;
  return {
    seq: record.seq,
    vector,
    terms: analyze(lexicalText(text)),
    speaker,
    sessionId: record.session_id ?? null,
    messageKey: record.request_id !== undefined && record.message_index !== undefined ? `${record.request_id}#${record.message_index}` : null,
    timeMs: Number.isFinite(text.timeMs) ? text.timeMs : 0,
    importance: record.importance,
    tags: record.tags.map((tag) => tag.toLowerCase()),
    hasTimeExpression: hasTimeExpression(record.text),
    eventPeriod: eventPeriod(record.text, text.timeMs),
    isQuestion: isDistractorQuestion(record.text, speaker),
  };
}

/** A record's standalone content, built once: a record is replaced, never changed, so it cannot go stale. */
const contentCache = new WeakMap<StoredRecord, string>();

export function hitContent(record: StoredRecord): string {
  let content = contentCache.get(record);
  if (content === undefined) contentCache.set(record, (content = standaloneContent(unitText(record))));
  return content;
}

export function publicMemory(record: StoredRecord): Memory {
  const { seq: _seq, batch: _batch, vec: _vec, model: _model, ...memory } = record;
  return memory;
}

export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
