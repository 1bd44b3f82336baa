import type { FastifyInstance } from 'fastify';
import { inRequest, REQUEST_ID, startServerSpan, tracingEnabled, type Span } from '../telemetry/tracing.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's server span (the no-op span while tracing is off). */
    span: Span | null;
  }
}

/**
 * Each request's server span, named by its route pattern (never the URL, which holds ids and
 * queries), a child of the caller's trace when it sent a `traceparent`; and the handler run with
 * that span current and the request id as its log lines' `reqId` (src/logger.ts). Registered
 * first, so the span covers the auth, limits and body parsing too. Without tracing (started
 * before the app is built: src/main.ts) no hook is added, so requests cost what they did.
 */
export function registerRequestTracing(app: FastifyInstance): void {
  app.decorateRequest('span', null);
  if (!tracingEnabled()) return;
  app.addHook('onRequest', (request, reply, done) => {
    const route = request.routeOptions.url;
    const span = startServerSpan(route === undefined ? request.method : `${request.method} ${route}`, { 'http.request.method': request.method, 'http.route': route, [REQUEST_ID]: request.id }, request.headers);
    request.span = span;
    // `close`, not onResponse: it comes for an answer cut short by the client too.
    reply.raw.once('close', () => {
      span.setAttribute('http.response.status_code', reply.statusCode);
      if (reply.statusCode >= 500) span.fail({ code: String(reply.statusCode) });
      span.end();
    });
    done();
  });
  // A callback hook, not an async one: the handler runs inside `done`, so it and everything it
  // awaits see the span and the request id (a body read between here and onRequest would not).
  app.addHook('preHandler', (request, _reply, done) => {
    inRequest(request.id, request.span, done);
  });
}
