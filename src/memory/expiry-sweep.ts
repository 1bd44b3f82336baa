import { removeChosen } from './memory-edits.js';
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
    swept += await removeChosen(service, userId, (current) => [...current.records.values()].filter((record) => !service.visible(record, nowMs)).map((record) => record.id), { expired: true });
  }
  return swept;
}
