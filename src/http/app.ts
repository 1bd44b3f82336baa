import Fastify, { LogController, type FastifyBaseLogger, type FastifyError, type FastifyInstance } from 'fastify';
import { AppError, createError, errors, isAppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { MemoryService } from '../memory/memory-service.js';
import { Authenticator } from './auth.js';
import { JsonSyntaxError, parseJson } from './json-body.js';
import { registerMemoryPoolRoutes } from './memorypool-routes.js';
import { registerPlatformRoutes } from './platform-routes.js';
import { authHook } from './request-context.js';

export interface AppOptions {
  service: MemoryService;
  authenticator: Authenticator;
  logger: Logger;
  topKMax?: number;
  bodyLimit?: number;
}

/** Fastify's own error codes, mapped into our table so every error body has one shape. */
const FASTIFY_CODES: Record<string, keyof typeof errors> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'BODY_TOO_LARGE',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'MALFORMED_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
};

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** Builds the app without listening: tests inject, only main.ts listens. */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: options.logger as FastifyBaseLogger,
    bodyLimit: options.bodyLimit ?? 8 * 1024 * 1024,
    // Fastify's request lines carry the URL, whose query string may hold a user's search:
    // ours (below) name only the route pattern.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    routerOptions: { maxParamLength: 2048 },
  });

  app.addHook('onResponse', async (request, reply) => {
    request.log.debug({ method: request.method, route: request.routeOptions.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) }, 'request');
  });

  let draining = false;
  app.decorate('startDraining', () => {
    draining = true;
  });
  app.decorateRequest('grant', null);

  // Every body is parsed as JSON, whatever content type is claimed: clients of a JSON API
  // often omit it, and a wrong guess must end in a 400, never a 500.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => {
    const buffer = body as Buffer;
    if (buffer.length === 0) return done(null, undefined);
    let text: string;
    try {
      text = utf8.decode(buffer);
    } catch {
      return done(createError('MALFORMED_JSON', 'Request body is not valid UTF-8'), undefined);
    }
    try {
      done(null, parseJson(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text));
    } catch (error) {
      const detail = error instanceof JsonSyntaxError ? `Request body is not valid JSON: ${error.message}` : undefined;
      done(createError('MALFORMED_JSON', detail), undefined);
    }
  });

  app.addHook('onRequest', async (request) => {
    if (draining && request.routeOptions.url !== '/health') throw createError('SHUTTING_DOWN');
  });
  app.addHook('onRequest', authHook(options.authenticator));

  app.setErrorHandler((error: FastifyError | AppError, request, reply) => {
    const appError = toAppError(error);
    if (appError.status >= 500) {
      request.log.error({ err: { message: (error as Error).message, code: (error as FastifyError).code, stack: (error as Error).stack }, url: request.routeOptions.url }, 'request failed');
    }
    const body = appError.code === 'VALIDATION_FAILED' ? { detail: appError.issues ?? [] } : { detail: { reason: appError.message } };
    if (appError.status === 503) reply.header('retry-after', '1');
    return reply.code(appError.status).send(body);
  });

  app.setNotFoundHandler((request, reply) => {
    reply.code(404).send({ detail: { reason: `No route ${request.method} ${request.url.split('?')[0]}` } });
  });

  registerMemoryPoolRoutes(app, options.service);
  registerPlatformRoutes(app, options.service, options.topKMax ?? 100);
  return app;
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
    /** Refuses new requests with 503 while in-flight ones finish (graceful shutdown). */
    startDraining(): void;
  }
}
