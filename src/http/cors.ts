import type { FastifyInstance } from 'fastify';

/**
 * Cross-origin requests from the browser pages of the origins MEMORYPOOL_CORS_ORIGINS lists (a
 * comma-separated list of `scheme://host[:port]`, or `*` for any): the client in a web app calls
 * the server directly. Off by default: with no list no CORS header is ever sent, so a page of
 * another origin cannot read an answer. A preflight (OPTIONS with Access-Control-Request-Method)
 * from a listed origin is answered here, before the token check, since browsers send it without
 * credentials; the real request still needs its token.
 */

const METHODS = 'GET, POST, PUT, PATCH, DELETE';
const ALLOWED_HEADERS = 'authorization, content-type, accept';
/** Headers a page's script may read: the client honours retry-after on 429 and 503. */
const EXPOSED_HEADERS = 'retry-after';
const PREFLIGHT_MAX_AGE_S = '600';

export function registerCors(app: FastifyInstance, origins: readonly string[]): void {
  if (origins.length === 0) return;
  const any = origins.includes('*');
  const listed = new Set(origins.map((origin) => origin.replace(/\/+$/, '').toLowerCase()));
  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (origin === undefined) return;
    reply.header('vary', 'origin');
    if (!any && !listed.has(origin.toLowerCase())) return;
    reply.header('access-control-allow-origin', any ? '*' : origin);
    reply.header('access-control-expose-headers', EXPOSED_HEADERS);
    if (request.method === 'OPTIONS' && request.headers['access-control-request-method'] !== undefined) {
      reply.header('access-control-allow-methods', METHODS);
      reply.header('access-control-allow-headers', ALLOWED_HEADERS);
      reply.header('access-control-max-age', PREFLIGHT_MAX_AGE_S);
      return reply.code(204).send();
    }
  });
}
