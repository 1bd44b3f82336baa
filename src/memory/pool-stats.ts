import type { UserCache } from './user-cache.js';
import type { ServiceContext } from './service-context.js';
import type { UserState } from './user-state.js';

/** What /mem/stats reports: per-user figures, the embedder's, and this replica's cache. */

export interface PoolStats {
  count: number;
  users: number;
  /** `reembedding`: memories held here still waiting for a vector of this model (see BackgroundReembedding). */
  embedder: { model: string; dimensions: number; reembedding: number };
  /** This replica's in-memory users: how many, their estimated size and the budget (null: none). */
  cache: { users: number; estimated_bytes: number; budget_bytes: number | null };
  per_user: Array<{
    user_id: string;
    count: number;
    sessions: number;
    bytes_on_disk: number;
    /** Whether this process holds the user in memory (its cache; with several processes or replicas, each its own). */
    cached: boolean;
    /** `graph`: whether the user keeps an HNSW graph (only past the exhaustive limit); `complete`: it holds every memory (always, for a user that keeps none). */
    index: { graph: boolean; loaded: boolean; vectors: number; complete: boolean; pending_flush: boolean };
  }>;
}

/** How many of the users held here have expired by now: what the store's totals still count until the sweep (only users holding an expiring memory are looked at). */
export function expiredHeld(service: ServiceContext): number {
  const nowMs = service.now();
  let expired = 0;
  for (const state of service.cache.loaded) {
    if (!state.expiring) continue;
    for (const record of state.records.values()) if (!service.visible(record, nowMs)) expired++;
  }
  return expired;
}

/**
 * Per-user figures without loading anyone: users this replica holds come from memory (brought
 * up to date), the others from the store's figures (`poolFigures`: kept between calls, only the
 * users written since read again), so a pool larger than the cache can be described without
 * evicting what is cached, or reading every user. With `only`, the figures of those users alone
 * (a server's service thread describes the users it owns: src/threads/).
 */
export async function poolStats(service: ServiceContext, only?: (userId: string) => boolean): Promise<PoolStats> {
  const perUser: PoolStats['per_user'] = [];
  let count = 0;
  const nowMs = service.now();
  for (const stored of await service.store.poolFigures(nowMs)) {
    const { userId } = stored;
    if (only && !only(userId)) continue;
    // Most users of a large pool are not held here: their entry is the store's figures, one object
    // with the shared index entry (indexStats), for 100,000 of them.
    const cached = service.cache.peek(userId) ? await service.existingUser(userId) : null;
    let { count: held, sessions } = stored;
    if (cached) {
      // Expired memories are not counted, as no other door shows them (the sweep deletes them later).
      const visible = [...cached.records.values()].filter((record) => !cached.expiring || service.visible(record, nowMs));
      held = visible.length;
      sessions = new Set(visible.map((record) => record.session_id).filter(Boolean)).size;
    }
    if (held === 0) continue;
    count += held;
    perUser.push({ user_id: userId, count: held, sessions, bytes_on_disk: stored.bytes, cached: cached !== null, index: indexStats(cached, held > service.weights.exhaustiveLimit) });
  }
  return {
    count,
    users: perUser.length,
    embedder: {
      model: service.embedder.modelId,
      dimensions: service.embedder.dimensions,
      reembedding: service.cache.loaded.reduce((sum, state) => sum + state.corpus.unembeddedCount, 0),
    },
    cache: cacheStats(service.cache),
    per_user: perUser,
  };
}

export function cacheStats(cache: UserCache): PoolStats['cache'] {
  return { users: cache.loaded.length, estimated_bytes: cache.estimatedBytes, budget_bytes: cache.budgetBytes ?? null };
}

type IndexFigures = PoolStats['per_user'][number]['index'];
/** The index of a user not held here, past the exhaustive limit or not (shared by every such entry; frozen, as answers are only serialised). */
const NOT_LOADED_GRAPH: IndexFigures = Object.freeze({ graph: true, loaded: false, vectors: 0, complete: false, pending_flush: false });
const NOT_LOADED_EXHAUSTIVE: IndexFigures = Object.freeze({ graph: false, loaded: false, vectors: 0, complete: true, pending_flush: false });

/** A user's index as /mem/stats shows it; `pastLimit`: it holds more memories than are scored exhaustively. */
function indexStats(state: UserState | null, pastLimit: boolean): IndexFigures {
  const inMemory = state?.corpus.vectors ?? null;
  if (!inMemory) return pastLimit ? NOT_LOADED_GRAPH : NOT_LOADED_EXHAUSTIVE;
  return { graph: true, loaded: true, vectors: inMemory.size, complete: state!.corpus.vectorIndexComplete, pending_flush: state!.indexDirty };
}
