import type { FastifyInstance } from 'fastify';
import type { MemoryService } from '../memory/memory-service.js';
import { invoke, poolStats, scoredMemory, searchHits } from '../protocol/invoke.js';
import {
  addParamsSchema,
  DEFAULT_USER,
  idParamsSchema,
  listParamsSchema,
  updateBodySchema,
  userScopeSchema,
} from '../protocol/memorypool-schemas.js';
import { authorizeUser } from './request-context.js';
import { parseOr400 } from '../protocol/validation.js';

/** The MemoryPool protocol: /health, /mem, /invoke, plus deleting a user's data for good. */
export function registerMemoryPoolRoutes(app: FastifyInstance, service: MemoryService): void {
  app.get('/health', async () => ({ ok: true, service: 'memorypool', count: await service.memoryCount() }));

  app.post('/mem', async (request, reply) => {
    const input = parseOr400(addParamsSchema, request.body ?? {});
    const userId = input.user_id ?? userFromQuery(request.query) ?? DEFAULT_USER;
    authorizeUser(request, userId);
    const memory = await service.addMemory({ userId, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata, source: input.source });
    return reply.code(201).send(memory);
  });

  app.get('/mem/search', async (request) => (await searchHits(service, request.query, (userId) => authorizeUser(request, userId))).map(scoredMemory));

  app.get('/mem/list', async (request) => {
    const input = parseOr400(listParamsSchema, request.query);
    authorizeUser(request, input.user_id);
    return service.list({ userId: input.user_id, limit: input.limit, filter: input.filter });
  });

  app.get('/mem/stats', async (request) => {
    const input = parseOr400(userScopeSchema, request.query);
    if (input.user_id !== undefined) authorizeUser(request, input.user_id);
    return poolStats(service, (userId) => authorizeUser(request, userId), input.user_id);
  });

  app.get('/mem/:id', async (request) => {
    const input = parseOr400(idParamsSchema, { ...(request.query as object), ...(request.params as object) });
    const userId = input.user_id ?? DEFAULT_USER;
    authorizeUser(request, userId);
    return service.get(userId, input.id);
  });

  app.patch('/mem/:id', async (request) => {
    const { id } = parseOr400(idParamsSchema, request.params);
    const input = parseOr400(updateBodySchema, request.body ?? {});
    const userId = input.user_id ?? userFromQuery(request.query) ?? DEFAULT_USER;
    authorizeUser(request, userId);
    return service.updateMemory({ userId, id, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata });
  });

  app.get('/mem/:id/history', async (request) => {
    const input = parseOr400(idParamsSchema, { ...(request.query as object), ...(request.params as object) });
    const userId = input.user_id ?? DEFAULT_USER;
    authorizeUser(request, userId);
    return service.history(userId, input.id);
  });

  app.delete('/mem/:id', async (request) => {
    const input = parseOr400(idParamsSchema, { ...(request.query as object), ...(request.params as object) });
    const userId = input.user_id ?? DEFAULT_USER;
    authorizeUser(request, userId);
    await service.delete(userId, input.id);
    return { deleted: input.id };
  });

  app.post('/invoke', async (request) => invoke(service, request.body, (userId) => authorizeUser(request, userId)));

  app.delete('/users/:user_id', async (request) => {
    const { user_id: userId } = parseOr400(userScopeSchema, request.params);
    authorizeUser(request, userId!);
    const deleted = await service.deleteUser(userId!);
    return { deleted_user: userId, deleted };
  });
}

function userFromQuery(query: unknown): string | undefined {
  const value = (query as Record<string, unknown> | undefined)?.user_id;
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}
