import type { MemoryVersion } from '../domain/memory.js';
import type { BatchOutcome, BatchWrite, ChangeDraft } from './memory-store.js';
import { patchedRecord, versionOf, type StoredRecord } from './stored-record.js';

/**
 * A batch's writes applied in order to the records they touch, in memory, before either store
 * writes anything: both stores then write the end state in one go (a rewrite, a transaction),
 * so they agree on what a batch that updates a memory twice, or updates then deletes it, leaves.
 */
export interface BatchPlan {
  outcomes: BatchOutcome[];
  /** New memories, with their seqs and vectors. */
  added: Array<{ record: StoredRecord; vector: Float32Array }>;
  /** Memories held before the batch and still there after it, at their last version: the versions replaced, oldest first, and the last new vector (none: the stored one stays). */
  updated: Map<string, { record: StoredRecord; replaced: MemoryVersion[]; vector?: Float32Array }>;
  /** Memories held before the batch that it deleted. */
  removed: Array<{ id: string; seq: number }>;
  /** Seqs the batch gave out, from the `nextSeq` it started at. */
  seqsTaken: number;
}

/** `held(id)`: the user's record of that id before the batch (undefined: none). */
export function planBatch(writes: readonly BatchWrite[], held: (id: string) => StoredRecord | undefined, nextSeq: number): BatchPlan {
  const plan: BatchPlan = { outcomes: [], added: [], updated: new Map(), removed: [], seqsTaken: 0 };
  // Each touched id's state as the batch goes: the record now (null: deleted by the batch).
  const current = new Map<string, StoredRecord | null>();
  const recordOf = (id: string) => (current.has(id) ? current.get(id) ?? undefined : held(id));
  for (const write of writes) {
    if (write.kind === 'add') {
      const record: StoredRecord = { ...write.draft.record, seq: nextSeq + plan.seqsTaken++ };
      plan.added.push({ record, vector: write.draft.vector });
      plan.outcomes.push({ kind: 'added', record });
      continue;
    }
    const old = recordOf(write.id);
    if (!old) {
      plan.outcomes.push({ kind: 'missing' });
      continue;
    }
    if (write.kind === 'remove') {
      current.set(write.id, null);
      plan.updated.delete(write.id);
      // Only a memory held before can be named: the batch's own adds get ids nobody knows yet.
      plan.removed.push({ id: write.id, seq: held(write.id)!.seq });
      plan.outcomes.push({ kind: 'removed', id: write.id, seq: old.seq });
      continue;
    }
    const record = patchedRecord(old, write.patch, nextSeq + plan.seqsTaken++);
    current.set(write.id, record);
    const before = plan.updated.get(write.id);
    plan.updated.set(write.id, { record, replaced: [...(before?.replaced ?? []), versionOf(old)], vector: write.patch.vector ?? before?.vector });
    plan.outcomes.push({ kind: 'updated', record, previousSeq: old.seq });
  }
  return plan;
}

/** The change events of a planned batch, one per operation that changed something, in its order. */
export function batchEvents(plan: Pick<BatchPlan, 'outcomes'>, userId: string, at: string): ChangeDraft[] {
  return plan.outcomes.flatMap((outcome): ChangeDraft[] => {
    if (outcome.kind === 'added' || outcome.kind === 'updated') {
      return [{ type: outcome.kind, at, user_id: userId, memory_id: outcome.record.id, version: outcome.record.version ?? 1 }];
    }
    return outcome.kind === 'removed' ? [{ type: 'deleted', at, user_id: userId, memory_id: outcome.id, version: null }] : [];
  });
}
