import { removeChosen } from './memory-edits.js';
import type { ServiceContext } from './service-context.js';

/**
 * Users not held in memory that one sweep looks at (the next sweep goes on from there): every
 * minute, a pool of 100,000 users must not be read whole (nor loaded, which would push the users
 * in use out of a bounded cache).
 */
const UNCACHED_PER_SWEEP = 256;

/** Where the rolling pass over the users not held in memory goes on from: one per service. */
export interface SweepCursor {
  next: number;
}

/**
 * Deletes for good the memories whose `expires_at` has passed, their history with them (each
 * store's delete takes it). Reads never wait for this: from its instant an expired memory is
 * invisible on every door (`ServiceContext.visible`); the sweep only reclaims the space. Each
 * sweep looks at every user held here (in memory, so the look costs nothing) and at the next
 * UNCACHED_PER_SWEEP of the others, asking the store for their counts with and without the
 * expired ones, and loads only a user that has expired memories to delete.
 */
export async function sweepExpired(service: ServiceContext, cursor: SweepCursor = { next: 0 }): Promise<number> {
  let swept = 0;
  const users = await service.store.listUsers();
  const held = users.filter((userId) => service.cache.peek(userId) !== undefined);
  const others = users.filter((userId) => service.cache.peek(userId) === undefined);
  if (cursor.next >= others.length) cursor.next = 0;
  const looked = others.slice(cursor.next, cursor.next + UNCACHED_PER_SWEEP);
  cursor.next += looked.length;
  for (const userId of looked) {
    const nowMs = service.now();
    const [all, visible] = await Promise.all([service.store.userCounts(userId), service.store.userCounts(userId, nowMs)]);
    if (visible.count < all.count) held.push(userId);
  }
  for (const userId of held) {
    const state = await service.existingUser(userId);
    if (!state || state.expiring === 0) continue;
    const nowMs = service.now();
    if (![...state.records.values()].some((record) => !service.visible(record, nowMs))) continue;
    swept += await removeChosen(service, userId, (current) => [...current.records.values()].filter((record) => !service.visible(record, nowMs)).map((record) => record.id), { expired: true });
  }
  return swept;
}
