import { z } from 'zod';
import { createError } from '../errors.js';
import type { MemoryApi } from '../memory/memory-api.js';
import { parseOr400 } from './validation.js';
import { OPERATION_LIST, OPERATION_TABLE, type ActionSpec, type OperationName, type UserCheck } from './operations.js';

/** The BIT tool-call envelope that /invoke and the CLI's stdin take. */
export const invokePayloadSchema = z.object({
  tool_id: z.unknown().optional(),
  tool: z.unknown().optional(),
  invoked_by: z.unknown().optional(),
  params: z.record(z.string(), z.unknown(), { error: 'params must be an object' }).optional(),
});

/** The operations that declare an action: /invoke's `params.action`. */
export type Action = { [K in OperationName]: (typeof OPERATION_TABLE)[K] extends { action: ActionSpec } ? K : never }[OperationName];

/** Every operation that declares an action, in the table's order. */
export const INVOKE_ACTIONS: readonly Action[] = OPERATION_LIST.filter((operation) => operation.action !== undefined).map((operation) => operation.name as Action);

/**
 * Routes a tool call on `params.action`, falling back to `params.tool`, then the envelope's
 * `tool`; each action validates with the same schema as its HTTP route.
 */
export async function invoke(service: MemoryApi, payload: unknown, checkUser: UserCheck): Promise<unknown> {
  const envelope = parseOr400(invokePayloadSchema, payload);
  const params = envelope.params ?? {};
  return runAction(service, pickAction(params.action, params.tool, envelope.tool), params, checkUser, 'invoke');
}

/**
 * One action on params validated with its declared schema: the shared core of /invoke, the CLI,
 * the MCP tools and the in-process pool. `defaultSource` is the `source` an add gets when the
 * caller names none (the door it came through).
 */
export async function runAction(service: MemoryApi, action: Action, params: Record<string, unknown>, checkUser: UserCheck, defaultSource: string): Promise<unknown> {
  const spec: ActionSpec = OPERATION_TABLE[action].action;
  return spec.run(service, parseOr400(spec.params, params), { checkUser, source: defaultSource });
}

function pickAction(...candidates: unknown[]): Action {
  const named = candidates.find((candidate) => typeof candidate === 'string' && candidate.trim() !== '') as string | undefined;
  if (named === undefined) throw createError('UNKNOWN_ACTION', `params.action is required: one of ${INVOKE_ACTIONS.join(', ')}`);
  const action = named.trim().toLowerCase();
  if ((INVOKE_ACTIONS as readonly string[]).includes(action)) return action as Action;
  throw createError('UNKNOWN_ACTION', `Unknown action ${JSON.stringify(named)}: expected one of ${INVOKE_ACTIONS.join(', ')}`);
}
