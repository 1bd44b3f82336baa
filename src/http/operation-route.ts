import type { FastifyInstance, FastifyReply, FastifyRequest, RouteShorthandOptions } from 'fastify';
import type { Operation } from '../protocol/operations.js';

/**
 * Serves an operation at the method and path its declaration gives, answering with its declared
 * success status, so the route and its OpenAPI entry cannot name different ones.
 */
export function serveOperation(
  app: FastifyInstance,
  operation: Operation,
  handler: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>,
  options: RouteShorthandOptions = {},
): void {
  app.route({
    ...options,
    method: operation.method,
    url: operation.path,
    // Not async: the handler's own promise is the answer, with no second one around it (a
    // promise fewer per request; fastify answers a synchronous throw as a rejection).
    handler: (request, reply) => {
      reply.code(operation.answer.status);
      return handler(request, reply);
    },
  });
}
