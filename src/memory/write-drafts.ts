import { randomUUID } from 'node:crypto';
import { createError } from '../errors.js';
import type { MemoryFields } from '../domain/memory.js';
import { splitIntoUnits, type UnitText } from '../ingest/message-units.js';
import type { UnitDraft } from '../store/memory-store.js';
import type { ConversationAdd, NewMemory } from './types.js';
import { withStoredFeatures } from './unit-features.js';

/**
 * The records a write stores, built in one place: an add's memory and an Add's units differ
 * only in what they carry beyond the common fields (metadata, or the Add's provenance).
 */

/** What a record holds past the fields every memory has. */
type Extra = Omit<MemoryFields, 'id' | 'user_id' | 'text' | 'tags' | 'importance' | 'source' | 'created_at'>;

/** The one record builder: a new id, the common fields, then the extras, then the model that made `vector`. */
export function unitDraft(
  common: { userId: string; text: string; tags: string[]; importance: number; source: string; createdAt: string },
  extra: Extra,
  vector: Float32Array,
  model: string,
): UnitDraft {
  return {
    // With its features (unit-features.ts): a load reads them instead of deriving them again.
    record: withStoredFeatures({
      id: randomUUID(),
      user_id: common.userId,
      text: common.text,
      tags: common.tags,
      importance: common.importance,
      source: common.source,
      created_at: common.createdAt,
      ...extra,
      model,
    }),
    vector,
  };
}

/** The unit of a MemoryPool add: its text trimmed, dated now. */
export function memoryUnit(input: NewMemory, nowMs: number): UnitText {
  return { text: input.text.trim(), timeMs: nowMs, tags: input.tags };
}

/** A MemoryPool add's record (the protocol's defaults for what it leaves out). */
/** The expiry an add or update asks for, as stored (ISO 8601): undefined when it names none, null when it clears it. */
export function expiryOf(input: { expiresAtMs?: number | null; ttlSeconds?: number }, nowMs: number): string | null | undefined {
  if (input.ttlSeconds !== undefined && input.expiresAtMs !== undefined) throw createError('INVALID_PARAMETER', 'ttl_seconds: give expires_at or ttl_seconds, not both');
  if (input.ttlSeconds !== undefined) return new Date(nowMs + input.ttlSeconds * 1000).toISOString();
  if (input.expiresAtMs === null) return null;
  return input.expiresAtMs === undefined ? undefined : new Date(input.expiresAtMs).toISOString();
}

export function memoryDraft(input: NewMemory, unit: UnitText, vector: Float32Array, model: string, nowMs = unit.timeMs): UnitDraft {
  const metadata = input.metadata && Object.keys(input.metadata).length > 0 ? { metadata: input.metadata } : {};
  // Written only when given, so a memory without scopes is the line it was before they existed.
  const expires = expiryOf(input, nowMs);
  const scopes = {
    ...(input.agentId !== undefined ? { agent_id: input.agentId } : {}),
    ...(input.runId !== undefined ? { run_id: input.runId } : {}),
    ...(expires ? { expires_at: expires } : {}),
  };
  return unitDraft(
    { userId: input.userId, text: unit.text, tags: input.tags ?? [], importance: input.importance ?? 0.5, source: input.source ?? 'cli', createdAt: new Date(unit.timeMs).toISOString() },
    { ...metadata, ...scopes },
    vector,
    model,
  );
}

/** One unit of an Add's message, with where it came from. */
export interface ConversationUnit {
  unit: UnitText;
  messageIndex: number;
  part: number;
  parts: number;
}

/** An Add's messages as units: each message split, dated by its timestamp, else by the Add's arrival. */
export function conversationUnits(input: ConversationAdd, receivedAt: number): ConversationUnit[] {
  const units: ConversationUnit[] = [];
  input.messages.forEach((message, messageIndex) => {
    const timeMs = message.timestamp ?? receivedAt;
    const parts = splitIntoUnits(message.content);
    parts.forEach((text, part) => units.push({ unit: { text, role: message.role.trim(), timeMs }, messageIndex, part, parts: parts.length }));
  });
  return units;
}

/** An Add's unit as a record: its provenance (session, speaker, time, request, position) beside the text. */
export function conversationDraft(input: ConversationAdd, unit: ConversationUnit, receivedAt: number, vector: Float32Array, model: string): UnitDraft {
  return unitDraft(
    { userId: input.userId, text: unit.unit.text, tags: [], importance: 0.5, source: 'add', createdAt: new Date(receivedAt).toISOString() },
    {
      session_id: input.sessionId,
      role: unit.unit.role,
      occurred_at: new Date(unit.unit.timeMs).toISOString(),
      request_id: input.requestId,
      message_index: unit.messageIndex,
      ...(unit.parts > 1 ? { part: unit.part, parts: unit.parts } : {}),
    },
    vector,
    model,
  );
}
