import type { MemoryFilter } from '../domain/memory.js';
import { timeMsOf } from '../domain/time-fields.js';
import { entityKey, type EntityKind } from '../retrieval/entities/entity-mentions.js';
import type { ServiceContext } from './service-context.js';
import type { UserState } from './user-state.js';

/**
 * "Everything about X": the user's entities (GET /mem/entities) and the `entity` filter of search,
 * list and delete, both read from the entity index the user's corpus keeps (src/retrieval/entities/).
 * An entity is named in any case and with or without a possessive: "Melanie", "melanie's".
 */

export interface EntitySummary {
  entity: string;
  kind: EntityKind;
  /** The user's memories that mention it (expired ones not counted). */
  count: number;
  /** The newest of their times (occurred_at, else created_at), ISO 8601; null if none parses. */
  last_seen: string | null;
}

/** The user's entities, the most mentioned first (ties: the newest mentioned, then by name); at most `limit`. */
export async function listEntities(service: ServiceContext, userId: string, limit: number): Promise<EntitySummary[]> {
  const state = await service.existingUser(userId);
  if (!state) return [];
  const nowMs = service.now();
  const out: Array<EntitySummary & { lastMs: number }> = [];
  for (const entry of state.corpus.entities.known()) {
    let count = 0;
    let lastMs = -Infinity;
    for (const seq of entry.seqs) {
      const record = state.bySeq.get(seq);
      if (!record || (state.expiring > 0 && !service.visible(record, nowMs))) continue;
      count++;
      const timeMs = timeMsOf(record, record.occurred_at !== undefined ? 'occurred_at' : 'created_at') ?? timeMsOf(record, 'created_at') ?? -Infinity;
      if (timeMs > lastMs) lastMs = timeMs;
    }
    if (count > 0) out.push({ entity: entry.surface, kind: entry.kind, count, last_seen: Number.isFinite(lastMs) ? new Date(lastMs).toISOString() : null, lastMs });
  }
  out.sort((a, b) => b.count - a.count || b.lastMs - a.lastMs || (a.entity < b.entity ? -1 : a.entity > b.entity ? 1 : 0));
  return out.slice(0, limit).map(({ lastMs: _lastMs, ...summary }) => summary);
}

/**
 * The filter's `entity` condition on this user, as a test of a memory's seq: the units of that
 * known entity (none when the user knows no such entity). Null when the filter names none.
 */
export function entityCondition(state: UserState, filter: MemoryFilter | undefined): ((seq: number) => boolean) | null {
  if (filter?.entity === undefined) return null;
  const seqs = state.corpus.entities.get(entityKey(filter.entity))?.seqs;
  return seqs ? (seq) => seqs.has(seq) : () => false;
}
