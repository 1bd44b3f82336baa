import type { Memory } from '../domain/memory.js';
import { denseText } from '../ingest/message-units.js';
import { notFound } from './memory-reads.js';
import { publicMemory, unitText } from './memory-records.js';
import { appendUnits } from './append-units.js';
import type { ServiceContext } from './service-context.js';
import type { MemoryUpdate, NewMemory } from './types.js';
import type { UserState } from './user-state.js';
import { expiryOf, memoryDraft, memoryUnit } from './write-drafts.js';

/**
 * The service's writes of single memories (add, update, delete) and the retention purge. Each
 * embeds outside the lock, then writes to the store under the user's lock and only then updates
 * the cached user, so a returned write is durable and searchable; an add to a small user this
 * process does not hold goes to the store alone (append-units.ts).
 */

export async function addMemory(service: ServiceContext, input: NewMemory): Promise<Memory> {
  const unit = memoryUnit(input, Date.now());
  const [vector] = await service.embed([denseText(unit)], 'ingest', input.userId);
  const draft = memoryDraft(input, unit, vector, service.embedder.modelId, service.now());
  const result = (await appendUnits(service, input.userId, [draft], [vector]))!;
  return publicMemory(result.records[0]);
}

/**
 * Replaces a memory by its next version: same id, version + 1. A new text is embedded first
 * (outside the lock, like an Add) and the memory is re-indexed before this returns, so from
 * the answer on searches find the new text and never the old one.
 */
export async function updateMemory(service: ServiceContext, input: MemoryUpdate): Promise<Memory> {
  const state = await service.existingUser(input.userId);
  const current = state?.records.get(input.id);
  // An expired memory is gone for every door, an update's included.
  if (!current || !service.visible(current, service.now())) throw notFound(input.id);
  const text = input.text?.trim();
  // Any text given is embedded, even one equal to what this replica holds: another writer may
  // change the text meanwhile, and the stored vector must be the stored text's.
  const [vector] = text !== undefined ? await service.embed([denseText({ ...unitText(current), text })], 'ingest', input.userId) : [];
  return service.underLock(input.userId, async (locked) => {
    const result = await service.store.update(input.userId, input.id, {
      text,
      tags: input.tags,
      importance: input.importance,
      metadata: input.metadata,
      agentId: input.agentId,
      runId: input.runId,
      expiresAt: expiryOf(input, service.now()),
      updatedAt: new Date().toISOString(),
      ...(vector ? { vector, model: service.embedder.modelId } : {}),
    });
    if (!result) throw notFound(input.id);
    service.cache.applyUpdate(locked, result, vector);
    return publicMemory(result.record);
  });
}

/** Deletes one memory: the store drops it (the JSONL store rewrites only its owner's file), then every index does. */
export async function deleteMemory(service: ServiceContext, userId: string, id: string): Promise<void> {
  const state = await service.existingUser(userId);
  if (!state?.records.has(id)) throw notFound(id);
  await service.underLock(userId, async (current) => {
    const result = await service.store.remove(userId, [id]);
    if (result.removed.length === 0) throw notFound(id);
    service.counted(-1);
    service.cache.applyRemove(current, result);
  });
}

/**
 * Deletes the memories `choose` picks, in one store write under the user's lock. They are chosen
 * there, from the user as it stands now, so a memory written meanwhile by this process is judged
 * too. Returns how many went.
 */
export async function removeChosen(service: ServiceContext, userId: string, choose: (state: UserState) => string[], options: { expired?: boolean } = {}): Promise<number> {
  return service.underLock(
    userId,
    async (current) => {
      const ids = choose(current);
      if (ids.length === 0) return 0;
      const result = await service.store.remove(userId, ids, options);
      service.cache.applyRemove(current, result);
      service.counted(-result.removed.length);
      return result.removed.length;
    },
    { attachIndex: false },
  );
}

/** Deletes every memory stored (ingested) before the cutoff; returns how many went. */
export async function purgeOlderThan(service: ServiceContext, cutoffMs: number): Promise<number> {
  let purged = 0;
  for (const userId of await service.store.listUsers()) {
    if (!service.cache.peek(userId)) {
      // Not cached here: the store alone; a replica holding the user sees the new version.
      const removed = (await service.store.removeOlderThan(userId, cutoffMs)).removed.length;
      service.counted(-removed);
      purged += removed;
      continue;
    }
    await service.underLock(
      userId,
      async (state) => {
        const result = await service.store.removeOlderThan(userId, cutoffMs);
        service.cache.applyRemove(state, result);
        service.counted(-result.removed.length);
        purged += result.removed.length;
      },
      { attachIndex: false },
    );
  }
  return purged;
}
