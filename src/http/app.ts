import { randomUUID } from 'node:crypto';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyServerFactory } from 'fastify';
import { AppError, createError, errors, isAppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { MemoryApi } from '../memory/memory-api.js';
import { Authenticator } from './auth.js';
import { serializeAnswer } from './json-answer.js';
import { readJsonBody, readJsonBodyInSlices, SLICED_BODY_BYTES } from './body-reader.js';
import { registerLoadShedding, type LoadSheddingOptions } from './load-shedding.js';
import { registerConsoleRoutes } from './console-routes.js';
import { registerMemoryPoolRoutes } from './memorypool-routes.js';
import { registerMetrics, ServiceMetrics } from './metrics.js';
import { registerOpenApi, trackRoutes } from './openapi.js';
import { registerPlatformRoutes } from './platform-routes.js';
import { registerRateLimit, type RateLimitOptions } from './rate-limit.js';
import { authHook } from './request-context.js';
import { registerCors } from './cors.js';
import { registerRequestTracing } from './request-tracing.js';

export interface AppOptions {
  service: MemoryApi;
  authenticator: Authenticator;
  logger: Logger;
  topKMax?: number;
  bodyLimit?: number;
  /** The Node server (HTTPS, slow-client timeouts: src/http/http-server.ts); fastify's plain HTTP when absent. */
  serverFactory?: FastifyServerFactory;
  /** 503 while the event loop lags (src/http/load-shedding.ts); off when absent. */
  loadShedding?: LoadSheddingOptions;
  /** 429 past a per-token request rate (src/http/rate-limit.ts); off when absent. */
  rateLimit?: RateLimitOptions;
  /** Origins whose pages may call the API from a browser (MEMORYPOOL_CORS_ORIGINS, src/http/cors.ts); none when absent. */
  corsOrigins?: readonly string[];
  /** GET /metrics without a token (MEMORYPOOL_METRICS_PUBLIC). */
  metricsPublic?: boolean;
  /**
   * Doors the assembler adds beside the HTTP API (the server: /mcp, src/server-app.ts), registered
   * after its routes and before the console and the OpenAPI document, behind the same hooks.
   */
  mounts?: ReadonlyArray<(app: FastifyInstance) => void>;
}

/** Fastify's own error codes, mapped into our table so every error body has one shape. */
const FASTIFY_CODES: Record<string, keyof typeof errors> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
};

/** Builds the app without listening: tests inject, only main.ts listens. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    bodyLimit: options.bodyLimit ?? 8 * 1024 * 1024,
    serverFactory: options.serverFactory,
    // Fastify's request lines carry the URL, whose query string may hold a user's search:
    // ours (below) name only the route pattern.
    logController: new LogController({ disableRequestLogging: true }),
    // Fastify's own closing 503 has a body of its own shape; ours (the draining hook below)
    // answers requests that arrive on open connections while the server closes.
    return503OnClosing: false,
    routerOptions: { maxParamLength: 2048 },
    // Unique across the processes of a cluster and across restarts (fastify's own count is
    // neither): the id a log line and a span share (src/http/request-tracing.ts).
    genReqId: () => randomUUID(),
    // Paths the router itself refuses (bad percent-encoding, a parameter over maxParamLength)
    // would otherwise get fastify's own body, which also echoes the URL back.
    frameworkErrors: (error, _request, reply) => {
      const detail = error.code === 'FST_ERR_MAX_PARAM_LENGTH' ? 'A path parameter is too long' : 'The request path is not validly encoded';
      sendError(reply, createError('BAD_REQUEST', detail));
    },
  });

  registerRequestTracing(app);
  // The hooks every request runs take fastify's callback form: an async hook costs its request two
  // promises, and while tracing is on Node 20's AsyncLocalStorage pays a hook on every promise.
  app.addHook('onResponse', (request, reply, done) => {
    request.log.debug({ method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
    done();
  });

  let draining = false;
  // Requests admitted before draining began and not yet answered: the drain waits for them,
  // since their client was told nothing yet (a body may still be arriving).
  let admitted = 0;
  const idleWaiters: Array<() => void> = [];
  app.decorate('startDraining', (timeoutMs = 10_000) => {
    draining = true;
    if (admitted === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      timer.unref();
      idleWaiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  });
  app.addHook('preClose', async () => {
    draining = true;
  });
  // While draining, every answer closes its connection: a client's idle keep-alive connection
  // would otherwise hold the server's close (and the process's exit) open. An answer given before
  // its request's body has all arrived (a 413 decided from content-length, a 401) closes it too:
  // keeping the connection alive would mean reading the rest of a body the server refused (7 MB
  // a time from a hostile client) only to discard it, on the cores other users' searches need.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (draining || !request.raw.complete) reply.header('connection', 'close');
    done(null, payload);
  });
  app.decorateRequest('grant', null);
  // Fastify's type says a string; it sends a Buffer the serializer returns as it sends one a handler does.
  app.setReplySerializer(serializeAnswer as (payload: unknown) => string);

  // Every body is parsed as JSON, whatever content type is claimed: clients of a JSON API
  // often omit it, and a wrong guess must end in a 400, never a 500.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => {
    const buffer = body as Buffer;
    if (buffer.length === 0) return done(null, undefined);
    if (buffer.length >= SLICED_BODY_BYTES) {
      readJsonBodyInSlices(buffer).then((value) => done(null, value), (error: Error) => done(error, undefined));
      return;
    }
    let value: unknown;
    try {
      value = readJsonBody(buffer);
    } catch (error) {
      return done(error as Error, undefined);
    }
    done(null, value);
  });

  // Before any route: the OpenAPI document lists every route registered after this.
  const routes = trackRoutes(app);
  registerMetrics(app, new ServiceMetrics(options.service));

  app.addHook('onRequest', (request, reply, done) => {
    if (draining && request.routeOptions.url !== '/health') return done(createError('SHUTTING_DOWN'));
    admitted++;
    reply.raw.once('close', () => {
      admitted--;
      if (admitted === 0) for (const wake of idleWaiters.splice(0)) wake();
    });
    done();
  });
  // Before the token check: a browser's preflight carries no credentials.
  registerCors(app, options.corsOrigins ?? []);
  // Pages and the API description hold no data: they load before the token is typed in.
  const pages = ['/', '/ui', '/ui/:file', '/openapi.json', '/docs', '/docs/:file'];
  app.addHook('onRequest', authHook(options.authenticator, options.metricsPublic ? [...pages, '/metrics'] : pages));

  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    const appError = toAppError(error);
    if (appError.status >= 500 && appError.code !== 'OVERLOADED') {
      request.log.error({ err: { message: (error as Error).message, code: (error as FastifyError).code, stack: (error as Error).stack }, url: request.routeOptions.url }, 'request failed');
    }
    return sendError(reply, appError);
  });

  app.setNotFoundHandler((request, reply) => {
    sendError(reply, createError('ROUTE_NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`));
  });

  // Before the routes: both hook into every route registered after them.
  if (options.loadShedding) await registerLoadShedding(app, options.loadShedding);
  if (options.rateLimit) await registerRateLimit(app, options.rateLimit);
  registerMemoryPoolRoutes(app, options.service);
  registerPlatformRoutes(app, options.service, options.topKMax ?? 100);
  for (const mount of options.mounts ?? []) mount(app);
  registerConsoleRoutes(app);
  registerOpenApi(app, routes);
  return app;
}

/**
 * The MemoryPool tool's own clients (the BIT agent's remote-tool call, the Styx pool client) read
 * an error as `{"error": "<message>"}`: on its routes the body carries that beside `detail`. The
 * platform's routes keep their body exactly as it is.
 */
const MEMORYPOOL_TOOL_PATH = /^\/(mem(\/|$)|invoke$)/;

/** The one error body: the platform's problem list for validation, `{detail: {reason}}` for the rest (plus `error` on the tool's routes). */
function sendError(reply: FastifyReply, appError: AppError): FastifyReply {
  const toolRoute = MEMORYPOOL_TOOL_PATH.test(reply.request.url.split('?')[0]);
  const body =
    appError.code === 'VALIDATION_FAILED'
      ? { detail: appError.issues ?? [] }
      : toolRoute
        ? { detail: { reason: appError.message }, error: appError.message }
        : { detail: { reason: appError.message } };
  if (appError.status === 503) reply.header('retry-after', '1');
  return reply.code(appError.status).send(appError.body ? { ...body, ...appError.body } : body);
}

function toAppError(error: FastifyError | AppError): AppError {
  if (isAppError(error)) return error;
  const mapped = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (mapped) return createError(mapped);
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return new AppError('BAD_REQUEST', error.message);
  }
  return createError('INTERNAL');
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Refuses new requests with 503 from now on; resolves once every request admitted before
     * has been answered (or after `timeoutMs`, default 10 s), so the caller can then close the service.
     */
    startDraining(timeoutMs?: number): Promise<void>;
  }
}
