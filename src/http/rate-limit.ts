import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { createError } from '../errors.js';
import { ClusterRateStore, isClusterWorker } from '../server-cluster.js';

/**
 * Optional per-token request limits for deployments exposed beyond loopback: at most `max`
 * requests per `windowMs` for each token, keyed by the SHA-256 digest the auth hook already
 * matched (no token sits in the limiter's memory in the clear; the hook runs first, so bad
 * credentials are a 401 and never count), or per client address when the service runs open. Off by default, so that an
 * evaluation run at 64-256 clients is never throttled. Past the limit: 429 with `retry-after`
 * (seconds until the window frees a request). /health is never limited.
 */
export interface RateLimitOptions {
  /** Requests per window per token; 0 turns the limit off. */
  max: number;
  windowMs: number;
}

export async function registerRateLimit(app: FastifyInstance, options: RateLimitOptions): Promise<void> {
  if (options.max <= 0) return;
  await app.register(rateLimit, {
    global: true,
    max: options.max,
    timeWindow: options.windowMs,
    keyGenerator: rateLimitKey,
    // Under several server processes the counts live in the primary: the limit is per token, not per process.
    ...(isClusterWorker() ? { store: ClusterRateStore } : {}),
    allowList: (request) => request.routeOptions.url === '/health',
    errorResponseBuilder: (_request, context) =>
      createError('RATE_LIMITED', `Rate limit exceeded: at most ${context.max} requests per ${context.after} for this token; retry in ${Math.ceil(context.ttl / 1000)} s`),
  });
}

function rateLimitKey(request: FastifyRequest): string {
  return request.grant ? `token:${request.grant.digest.toString('base64url')}` : `ip:${request.ip}`;
}
