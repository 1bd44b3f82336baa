import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createError } from '../errors.js';
import type { MemoryApi } from '../memory/memory-api.js';
import { invoke, runAction, type Action } from '../protocol/invoke.js';
import { addParamsSchema, DEFAULT_USER, idParamsSchema, listParamsSchema, updateBodySchema, userScopeSchema } from '../protocol/memorypool-schemas.js';
import { listPageOf, OPERATION_TABLE as op, scopesOf } from '../protocol/operations.js';
import { serveOperation } from './operation-route.js';
import { packageVersion } from './package-files.js';
import { authorizeUser, userCheck } from './request-context.js';
import { parseOr400 } from '../protocol/validation.js';

/** The MemoryPool protocol: /health, /mem, /invoke, plus deleting a user's data for good. */
export function registerMemoryPoolRoutes(app: FastifyInstance, service: MemoryApi): void {
  /** The action on the query and path parameters together, as /invoke would run it. */
  const asAction = (action: Action) => (request: FastifyRequest) =>
    runAction(service, action, { ...(request.query as object), ...(request.params as object) }, userCheck(request), 'http');

  serveOperation(app, op.health, async () => ({ ok: true, service: 'memorypool', version: packageVersion(), count: await service.healthCount() }));

  serveOperation(app, op.add, async (request) => {
    const input = parseOr400(addParamsSchema, request.body ?? {});
    const userId = input.user_id ?? userFromQuery(request.query) ?? DEFAULT_USER;
    authorizeUser(request, userId);
    return service.addMemory({ userId, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata, source: input.source, ...scopesOf(input) });
  });

  serveOperation(app, op.search, asAction('search'));
  // The POST forms: the same actions on a JSON body (where a `where` expression fits).
  const onBody = (action: Action) => (request: FastifyRequest) => runAction(service, action, bodyObject(request.body), userCheck(request), 'http');
  serveOperation(app, op.find, onBody('search'));
  serveOperation(app, op.page, onBody('page'));
  serveOperation(app, op.purge, onBody('purge'));
  serveOperation(app, op.batch, onBody('batch'));
  serveOperation(app, op.list, async (request, reply) => {
    const input = parseOr400(listParamsSchema, request.query ?? {});
    const page = await listPageOf(service, input, userCheck(request));
    if (page.nextCursor !== null) {
      reply.header('x-next-cursor', page.nextCursor);
      reply.header('link', `<${nextPageUrl(request.url, page.nextCursor)}>; rel="next"`);
    }
    return page.memories;
  });
  serveOperation(app, op.stats, asAction('stats'));
  serveOperation(app, op.entities, asAction('entities'));
  serveOperation(app, op.changes, asAction('changes'));
  serveOperation(app, op.webhooks, asAction('webhooks'));

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
    return service.updateMemory({ userId, id, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata, ...scopesOf(input) });
  });

  serveOperation(app, op.history, asAction('history'));
  serveOperation(app, op.delete, asAction('delete'));

  app.post('/invoke', async (request) => invoke(service, request.body, userCheck(request)));

  serveOperation(app, op.deleteUser, async (request) => {
    const { user_id: userId } = parseOr400(userScopeSchema, request.params);
    authorizeUser(request, userId!);
    const deleted = await service.deleteUser(userId!);
    return { deleted_user: userId, deleted };
  });
}

/** A JSON body as an action's params: an object, or nothing. */
function bodyObject(body: unknown): Record<string, unknown> {
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw createError('INVALID_PARAMETER', 'body: must be a JSON object');
  return body as Record<string, unknown>;
}

/** The request's own URL with `cursor` set to the next page's (RFC 8288: a reference relative to the request). */
function nextPageUrl(url: string, cursor: string): string {
  const [path, query = ''] = url.split('?', 2);
  const params = new URLSearchParams(query);
  params.set('cursor', cursor);
  return `${path}?${params}`;
}

function userFromQuery(query: unknown): string | undefined {
  const value = (query as Record<string, unknown> | undefined)?.user_id;
  return typeof value === 'string' && value.trim() !== '' ? value : undefined;
}
