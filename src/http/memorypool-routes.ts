import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { MemoryService } from '../memory/memory-service.js';
import { invoke, runAction, type Action } from '../protocol/invoke.js';
import { addParamsSchema, DEFAULT_USER, idParamsSchema, updateBodySchema, userScopeSchema } from '../protocol/memorypool-schemas.js';
import { OPERATION_TABLE as op } from '../protocol/operations.js';
import { serveOperation } from './operation-route.js';
import { packageVersion } from './package-files.js';
import { authorizeUser } from './request-context.js';
import { parseOr400 } from '../protocol/validation.js';

/** The MemoryPool protocol: /health, /mem, /invoke, plus deleting a user's data for good. */
export function registerMemoryPoolRoutes(app: FastifyInstance, service: MemoryService): void {
  /** The action on the query and path parameters together, as /invoke would run it. */
  const asAction = (action: Action) => (request: FastifyRequest) =>
    runAction(service, action, { ...(request.query as object), ...(request.params as object) }, (userId) => authorizeUser(request, userId), 'http');

  serveOperation(app, op.health, async () => ({ ok: true, service: 'memorypool', version: packageVersion(), count: await service.memoryCount() }));

  serveOperation(app, op.add, async (request) => {
    const input = parseOr400(addParamsSchema, request.body ?? {});
    const userId = input.user_id ?? userFromQuery(request.query) ?? DEFAULT_USER;
    authorizeUser(request, userId);
    return service.addMemory({ userId, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata, source: input.source });
  });

  serveOperation(app, op.search, asAction('search'));
  serveOperation(app, op.list, asAction('list'));
  serveOperation(app, op.stats, asAction('stats'));

  // Not the get action: over HTTP the history is its own route, not a flag.
  serveOperation(app, op.get, async (request) => {
    const input = parseOr400(idParamsSchema, { ...(request.query as object), ...(request.params as object) });
    const userId = input.user_id ?? DEFAULT_USER;
    authorizeUser(request, userId);
    return service.get(userId, input.id);
  });

  serveOperation(app, op.update, async (request) => {
    const { id } = parseOr400(idParamsSchema, request.params);
    const input = parseOr400(updateBodySchema, request.body ?? {});
    const userId = input.user_id ?? userFromQuery(request.query) ?? DEFAULT_USER;
    authorizeUser(request, userId);
    return service.updateMemory({ userId, id, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata });
  });

  serveOperation(app, op.history, asAction('history'));
  serveOperation(app, op.delete, asAction('delete'));

  app.post('/invoke', async (request) => invoke(service, request.body, (userId) => authorizeUser(request, userId)));

  serveOperation(app, op.deleteUser, async (request) => {
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
