import type { z } from 'zod';
import { createError, isAppError, type AppError } from '../errors.js';
import type { MemoryApi } from '../memory/memory-api.js';
import type { BatchOperation, BatchOutcome } from '../memory/types.js';
import { BATCH_OPERATION_SCHEMAS, type batchParamsSchema } from './memorypool-schemas.js';
import { parseOr400 } from './validation.js';

/**
 * POST /mem/batch (and /invoke batch, MCP write_memories): each operation validated on its own
 * with the schema its single route uses, so an invalid one answers its own 400 (naming its place,
 * `operations[2].text: is required`) and the valid ones are written together.
 */

/** One operation's answer: its status as its own route would have answered, and the memory, the id deleted or the error. */
export type BatchResult = { status: number; memory?: unknown; deleted?: string; error?: string };

export async function runBatch(service: MemoryApi, input: z.output<typeof batchParamsSchema>, userId: string): Promise<{ results: BatchResult[] }> {
  const parsed = input.operations.map((operation, index) => readOperation(operation, index));
  const valid = parsed.filter((entry): entry is BatchOperation => !isAppError(entry));
  const outcomes = valid.length > 0 ? await service.batch(userId, valid) : [];
  let next = 0;
  return { results: parsed.map((entry) => (isAppError(entry) ? refusal(entry) : answer(outcomes[next++]))) };
}

function readOperation(operation: unknown, index: number): BatchOperation | AppError {
  const place = `operations[${index}]`;
  try {
    const op = (operation as { op?: unknown } | null)?.op;
    if (typeof operation !== 'object' || operation === null || Array.isArray(operation)) return refuse(`${place}: must be an object`);
    if (op !== 'add' && op !== 'update' && op !== 'delete') return refuse(`${place}.op: must be "add", "update" or "delete"`);
    // The batch names its user once: an operation naming another would be written to the wrong one.
    if ('user_id' in operation) return refuse(`${place}.user_id: name the user once, on the batch`);
    const fields: Record<string, unknown> = parseOr400(BATCH_OPERATION_SCHEMAS[op] as z.ZodType<Record<string, unknown>>, operation);
    if (op === 'delete') return { op, id: fields.id as string };
    const { agent_id: agentId, run_id: runId, expires_at: expiresAtMs, ttl_seconds: ttlSeconds, ...rest } = fields;
    return { ...rest, agentId, runId, expiresAtMs, ttlSeconds } as BatchOperation;
  } catch (error) {
    if (!isAppError(error)) throw error;
    // A rule on the whole operation (at least one field to update) is named by the operation's place.
    return refuse(error.message.startsWith('body: ') ? `${place}: ${error.message.slice(6)}` : `${place}.${error.message}`);
  }
}

function refuse(message: string): AppError {
  return createError('INVALID_PARAMETER', message);
}

function refusal(error: AppError): BatchResult {
  return { status: error.status, error: error.message };
}

function answer(outcome: BatchOutcome): BatchResult {
  if ('error' in outcome) return refusal(outcome.error);
  if ('deleted' in outcome) return { status: 200, deleted: outcome.deleted };
  return { status: outcome.created ? 201 : 200, memory: outcome.memory };
}
