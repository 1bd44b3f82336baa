import type { MemoryFields } from './memory.js';
import { timeMsOf } from './time-fields.js';

/**
 * A memory's scopes beside its user: the agent that holds it and the run (a session, a task) it
 * came from. Both optional strings; a memory without them belongs to the user alone, and a filter
 * on a scope nobody has matches nothing (never "all", never an error).
 */
export const SCOPE_FIELDS = ['agent_id', 'run_id'] as const;
export type ScopeField = (typeof SCOPE_FIELDS)[number];
export const MAX_SCOPE_CHARS = 256;

/** Whether the memory has expired at `nowMs`: from its `expires_at` on, it is invisible everywhere. */
export function isExpired(record: Pick<MemoryFields, 'expires_at'>, nowMs: number): boolean {
  const expiresMs = timeMsOf(record, 'expires_at');
  return expiresMs !== undefined && expiresMs <= nowMs;
}
