import type { AppendResult, UnitDraft } from '../store/memory-store.js';
import { APPEND, type ServiceContext } from './service-context.js';

/**
 * Appends a write's units to a user. A user this process holds (or is loading) takes them under
 * its lock, through its cached state, as every write does. A user it does not hold is written
 * straight to the store when it is small enough never to keep an HNSW graph (at most the
 * exhaustive limit once written): loading it first, only to add to a state nobody may search
 * again, cost each such write the user's whole load (its file or rows read, every text analysed,
 * the indexes built: ~1-2 ms of CPU for a user of 30 memories), which is most writes of a service
 * of many users (bench/many-users.ts, the random-user Adds). The store orders the write among the
 * others to that user, as it does those of other processes and replicas; a state of the user
 * loaded meanwhile is behind the store's version, so its next read takes the write in
 * (`UserCache.fresh`) and its next write starts from the store's (`applyAppend`), as after another
 * process's write. A larger user is loaded as before: its graph is kept current by each write
 * rather than rebuilt at its next load.
 *
 * Null when the store already holds an Add of this `requestId` (nothing written).
 */
export async function appendUnits(service: ServiceContext, userId: string, drafts: readonly UnitDraft[], vectors: readonly Float32Array[], requestId?: string): Promise<AppendResult | null> {
  const options = requestId === undefined ? {} : { requestId };
  // Held is checked before the count (a held user needs no query) and again after it: a read may
  // have started loading the user while the count was asked, and its state then takes the write.
  if (!service.cache.holds(userId) && (await service.store.storedCount(userId)) + drafts.length <= service.weights.exhaustiveLimit && !service.cache.holds(userId)) {
    const result = await service.store.append(userId, drafts, options);
    if (result) service.counted(result.records.length);
    return result;
  }
  return service.underLock(
    userId,
    async (state) => {
      if (requestId !== undefined && state.requestIds.has(requestId)) return null;
      // The store checks the request id in the same write: of two replicas racing, the first wins.
      const result = await service.store.append(userId, drafts, options);
      if (!result) {
        if (requestId !== undefined) state.requestIds.add(requestId);
        return null;
      }
      service.counted(result.records.length);
      service.cache.applyAppend(state, result, vectors);
      return result;
    },
    APPEND,
  );
}
