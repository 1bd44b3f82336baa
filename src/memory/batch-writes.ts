import type { Memory } from '../domain/memory.js';
import { isAppError, type AppError } from '../errors.js';
import { denseText, type UnitText } from '../ingest/message-units.js';
import type { BatchWrite } from '../store/memory-store.js';
import { notFound } from './memory-reads.js';
import { publicMemory, unitText } from './memory-records.js';
import type { ServiceContext } from './service-context.js';
import type { BatchOperation, BatchOutcome } from './types.js';
import { expiryOf, memoryDraft, memoryUnit } from './write-drafts.js';

/**
 * A batch of adds, updates and deletes of one user, in one store write: every text embedded
 * first (one call, outside the lock, as any write), then under the user's lock the store applies
 * them in order and returns only once all are durable, and only then the cache takes them in.
 * An operation that cannot apply (its memory not there, or expired; two expiries) answers its own
 * error and the others go ahead.
 */
export async function writeBatch(service: ServiceContext, userId: string, operations: readonly BatchOperation[]): Promise<BatchOutcome[]> {
  const nowMs = service.now();
  const before = await service.existingUser(userId);
  // Texts to embed, each with the operation it belongs to.
  const texts: Array<{ index: number; text: string }> = [];
  const units: Array<UnitText | undefined> = [];
  const refused = new Map<number, AppError>();
  operations.forEach((operation, index) => {
    if (operation.op === 'delete') return;
    if (operation.op === 'add') {
      units[index] = memoryUnit({ userId, ...operation }, Date.now());
      return texts.push({ index, text: denseText(units[index]) });
    }
    if (operation.text === undefined) return;
    const current = before?.records.get(operation.id);
    // An update of a memory not there when the batch began is not found (below); its text is not worth embedding.
    if (current) texts.push({ index, text: denseText({ ...unitText(current), text: operation.text.trim() }) });
  });
  const embedded = await service.embed(texts.map(({ text }) => text), 'ingest', userId);
  const vectors: Array<Float32Array | undefined> = [];
  texts.forEach(({ index }, i) => (vectors[index] = embedded[i]));

  return service.underLock(userId, async (state) => {
    const writes: BatchWrite[] = [];
    const writeOf: number[] = [];
    operations.forEach((operation, index) => {
      const write = storeWrite(service, operation, units[index], vectors[index], userId, nowMs);
      if (isAppError(write)) return refused.set(index, write);
      // Expired is gone for every door; the store would still find it.
      if (write.kind !== 'add') {
        const held = state.records.get(write.id);
        if (held && !service.visible(held, nowMs)) return refused.set(index, notFound(write.id));
        // Its memory was not there when the batch began (another writer's, since): not found then.
        if (write.kind === 'update' && write.patch.text !== undefined && !write.patch.vector) return refused.set(index, notFound(write.id));
      }
      writeOf[index] = writes.length;
      writes.push(write);
    });
    const result = writes.length > 0 ? await service.store.batch(userId, writes) : null;
    if (result) {
      service.cache.applyBatch(state, result, writes.map((write) => (write.kind === 'add' ? write.draft.vector : write.kind === 'update' ? write.patch.vector : undefined)));
      service.counted(result.outcomes.filter((outcome) => outcome.kind === 'added').length - result.outcomes.filter((outcome) => outcome.kind === 'removed').length);
    }
    return operations.map((operation, index): BatchOutcome => {
      const error = refused.get(index);
      if (error) return { error };
      const outcome = result!.outcomes[writeOf[index]];
      if (outcome.kind === 'missing') return { error: notFound((operation as { id: string }).id) };
      if (outcome.kind === 'removed') return { deleted: outcome.id };
      return { memory: publicMemory(outcome.record) as Memory, created: outcome.kind === 'added' };
    });
  });
}

/** The operation as the store writes it, or the error that keeps it out. */
function storeWrite(service: ServiceContext, operation: BatchOperation, unit: UnitText | undefined, vector: Float32Array | undefined, userId: string, nowMs: number): BatchWrite | AppError {
  try {
    if (operation.op === 'delete') return { kind: 'remove', id: operation.id };
    if (operation.op === 'add') {
      return { kind: 'add', draft: memoryDraft({ userId, ...operation }, unit!, vector!, service.embedder.modelId, nowMs) };
    }
    const { op: _op, id, text, tags, importance, metadata, agentId, runId } = operation;
    return {
      kind: 'update',
      id,
      patch: {
        text: text?.trim(),
        tags,
        importance,
        metadata,
        agentId,
        runId,
        expiresAt: expiryOf(operation, nowMs),
        updatedAt: new Date().toISOString(),
        ...(vector ? { vector, model: service.embedder.modelId } : {}),
      },
    };
  } catch (error) {
    if (isAppError(error)) return error;
    throw error;
  }
}
