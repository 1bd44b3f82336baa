import type { ServiceContext } from './service-context.js';

/**
 * Deletes for good the memories whose `expires_at` has passed, their history with them (each
 * store's delete takes it). Reads never wait for this: from its instant an expired memory is
 * invisible on every door (`ServiceContext.visible`); the sweep only reclaims the space.
 */
export async function sweepExpired(service: ServiceContext): Promise<number> {
  let swept = 0;
  for (const userId of await service.store.listUsers()) {
    const state = await service.existingUser(userId);
    if (!state || state.expiring === 0) continue;
    const nowMs = service.now();
    if (![...state.records.values()].some((record) => !service.visible(record, nowMs))) continue;
    await service.underLock(
      userId,
      async (current) => {
        // Chosen under the lock, from the user as it stands now: an expiry moved meanwhile by this process is seen.
        const ids = [...current.records.values()].filter((record) => !service.visible(record, nowMs)).map((record) => record.id);
        if (ids.length === 0) return;
        const result = await service.store.remove(userId, ids);
        service.cache.applyRemove(current, result);
        service.counted(-result.removed.length);
        swept += result.removed.length;
      },
      { attachIndex: false },
    );
  }
  return swept;
}
