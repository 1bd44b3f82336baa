import type { MemoryFilter } from '../domain/memory.js';
import { removeChosen } from './memory-edits.js';
import { entityCondition } from './entity-reads.js';
import { matchesFilter } from './filter-match.js';
import type { ServiceContext } from './service-context.js';
import type { UserState } from './user-state.js';

/**
 * "Forget everything about project X": deletes every memory of the user that passes the filter
 * (expired ones are gone already), their history with them, in one store write. With `dryRun`,
 * counts what it would delete and deletes nothing.
 */
export async function deleteMatching(service: ServiceContext, userId: string, filter: MemoryFilter, dryRun: boolean): Promise<number> {
  const state = await service.existingUser(userId);
  if (!state) return 0;
  if (dryRun) return matching(service, state, filter).length;
  return removeChosen(service, userId, (current) => matching(service, current, filter));
}

function matching(service: ServiceContext, state: UserState, filter: MemoryFilter): string[] {
  const nowMs = service.now();
  const mentions = entityCondition(state, filter);
  const ids: string[] = [];
  for (const record of state.records.values()) if (service.visible(record, nowMs) && (!mentions || mentions(record.seq)) && matchesFilter(record, filter)) ids.push(record.id);
  return ids;
}
