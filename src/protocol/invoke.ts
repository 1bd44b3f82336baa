import { z } from 'zod';
import { createError } from '../errors.js';
import type { MemoryService } from '../memory/memory-service.js';
import type { ScoreExplanation, ScoredMemory, SearchHit } from '../memory/types.js';
import { parseOr400 } from './validation.js';
import {
  addParamsSchema,
  DEFAULT_USER,
  getParamsSchema,
  idParamsSchema,
  listParamsSchema,
  searchParamsSchema,
  updateParamsSchema,
  userScopeSchema,
} from './memorypool-schemas.js';

/** The BIT tool-call envelope that /invoke and the CLI's stdin take. */
export const invokePayloadSchema = z.object({
  tool_id: z.unknown().optional(),
  tool: z.unknown().optional(),
  invoked_by: z.unknown().optional(),
  params: z.record(z.string(), z.unknown(), { error: 'params must be an object' }).optional(),
});

export const INVOKE_ACTIONS = ['add', 'search', 'list', 'get', 'update', 'history', 'delete', 'stats'] as const;
export type Action = (typeof INVOKE_ACTIONS)[number];

/** Called with each user an action touches, before it is touched (token scopes). */
export type UserCheck = (userId: string) => void;

/**
 * Routes a tool call on `params.action`, falling back to `params.tool`, then the envelope's
 * `tool`; each action validates with the same schema as its HTTP route.
 */
export async function invoke(service: MemoryService, payload: unknown, checkUser: UserCheck): Promise<unknown> {
  const envelope = parseOr400(invokePayloadSchema, payload);
  const params = envelope.params ?? {};
  return runAction(service, pickAction(params.action, params.tool, envelope.tool), params, checkUser, 'invoke');
}

/**
 * One action on validated params: the shared core of /invoke, the CLI and the MCP tools.
 * `defaultSource` is the `source` an add gets when the caller names none (the door it came through).
 */
export async function runAction(service: MemoryService, action: Action, params: Record<string, unknown>, checkUser: UserCheck, defaultSource: string): Promise<unknown> {
  switch (action) {
    case 'add': {
      const input = parseOr400(addParamsSchema, params);
      const userId = input.user_id ?? DEFAULT_USER;
      checkUser(userId);
      return service.addMemory({ userId, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata, source: input.source ?? defaultSource });
    }
    case 'search':
      return (await searchHits(service, params, checkUser)).map(scoredMemory);
    case 'list': {
      const input = parseOr400(listParamsSchema, params);
      checkUser(input.user_id);
      return service.list({ userId: input.user_id, limit: input.limit, filter: input.filter });
    }
    case 'get': {
      const input = parseOr400(getParamsSchema, params);
      const userId = input.user_id ?? DEFAULT_USER;
      checkUser(userId);
      const memory = await service.get(userId, input.id);
      return input.history ? { ...memory, versions: (await service.history(userId, input.id)).versions } : memory;
    }
    case 'update': {
      const input = parseOr400(updateParamsSchema, params);
      const userId = input.user_id ?? DEFAULT_USER;
      checkUser(userId);
      return service.updateMemory({ userId, id: input.id, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata });
    }
    case 'history': {
      const input = parseOr400(idParamsSchema, params);
      const userId = input.user_id ?? DEFAULT_USER;
      checkUser(userId);
      return service.history(userId, input.id);
    }
    case 'delete': {
      const input = parseOr400(idParamsSchema, params);
      const userId = input.user_id ?? DEFAULT_USER;
      checkUser(userId);
      await service.delete(userId, input.id);
      return { deleted: input.id };
    }
    case 'stats': {
      const input = parseOr400(userScopeSchema, params);
      if (input.user_id !== undefined) checkUser(input.user_id);
      return poolStats(service, checkUser, input.user_id);
    }
  }
}

function pickAction(...candidates: unknown[]): Action {
  const named = candidates.find((candidate) => typeof candidate === 'string' && candidate.trim() !== '') as string | undefined;
  if (named === undefined) throw createError('UNKNOWN_ACTION', `params.action is required: one of ${INVOKE_ACTIONS.join(', ')}`);
  const action = named.trim().toLowerCase();
  if ((INVOKE_ACTIONS as readonly string[]).includes(action)) return action as Action;
  throw createError('UNKNOWN_ACTION', `Unknown action ${JSON.stringify(named)}: expected one of ${INVOKE_ACTIONS.join(', ')}`);
}

/**
 * A MemoryPool search (GET /mem/search, /invoke, the CLI, MCP recall): filtered as asked, each
 * distinct text once.
 */
export async function searchHits(service: MemoryService, params: unknown, checkUser: UserCheck): Promise<SearchHit[]> {
  const input = parseOr400(searchParamsSchema, params);
  checkUser(input.user_id);
  return service.search({ userId: input.user_id, query: input.query, limit: input.limit, filter: input.filter, explain: input.explain, collapseDuplicates: true });
}

/** A search hit as the MemoryPool doors answer it: the memory, its score, its folded duplicates and its explanation when asked for. */
export function scoredMemory(hit: SearchHit): ScoredMemory & { explanation?: ScoreExplanation } {
  return {
    ...hit.memory,
    score: hit.score,
    ...(hit.duplicates !== undefined ? { duplicates: hit.duplicates } : {}),
    ...(hit.explanation ? { explanation: hit.explanation } : {}),
  };
}

/** Pool statistics restricted to the users the caller may see (all of them with an unscoped token). */
export async function poolStats(service: MemoryService, checkUser: UserCheck, onlyUser?: string): Promise<unknown> {
  const stats = await service.stats();
  const visible = stats.per_user.filter((entry) => (onlyUser === undefined || entry.user_id === onlyUser) && allowed(checkUser, entry.user_id));
  if (visible.length === stats.per_user.length) return stats;
  return { ...stats, count: visible.reduce((sum, entry) => sum + entry.count, 0), users: visible.length, per_user: visible };
}

function allowed(checkUser: UserCheck, userId: string): boolean {
  try {
    checkUser(userId);
    return true;
  } catch {
    return false;
  }
}
