import type { MemoryFilter } from '../domain/memory.js';
import { matchesFilter } from './memory-records.js';
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
  return service.underLock(
    userId,
    async (current) => {
      // Chosen under the lock from the user as it stands, so a memory written meanwhile by this process is judged too.
      const ids = matching(service, current, filter);
      if (ids.length === 0) return 0;
      const result = await service.store.remove(userId, ids);
      service.cache.applyRemove(current, result);
      service.counted(-result.removed.length);
      return result.removed.length;
    },
    { attachIndex: false },
  );
}

function matching(service: ServiceContext, state: UserState, filter: MemoryFilter): string[] {
  const nowMs = service.now();
  const ids: string[] = [];
  for (const record of state.records.values()) if (service.visible(record, nowMs) && matchesFilter(record, filter)) ids.push(record.id);
  return ids;
}
