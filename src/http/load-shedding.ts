import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import { createError } from '../errors.js';

/**
 * Sheds load when the process is already behind: while the event loop's mean delay over the
 * last sample exceeds the threshold, new requests get a 503 with `retry-after` at once instead
 * of joining a queue that only grows (every queued request would wait for all the ones before
 * it, and time out anyway). The threshold is far above what a platform run at 64-256 clients
 * causes (bench/hostile-load.ts prints the delay it measures), so it only acts when something
 * went wrong. /health keeps answering: a load balancer should see the process alive and busy.
 */
export interface LoadSheddingOptions {
  /** Mean event-loop delay (ms) over a sample above which requests are shed; 0 turns shedding off. */
  maxEventLoopDelayMs: number;
  /** How often the delay is sampled (ms). */
  sampleIntervalMs?: number;
}

export async function registerLoadShedding(app: FastifyInstance, options: LoadSheddingOptions): Promise<void> {
  if (options.maxEventLoopDelayMs <= 0) return;
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    sampleInterval: options.sampleIntervalMs ?? 1_000,
    // Our error handler writes the body and `retry-after` of every 503.
    pressureHandler: async (request, _reply, type, value) => {
      if (request.routeOptions.url === '/health') return;
      request.log.warn({ type, value: value === undefined ? undefined : Math.round(value) }, 'overloaded: request shed');
      throw createError('OVERLOADED', `Service is overloaded (event-loop delay ${Math.round(value ?? 0)} ms): retry shortly`);
    },
  });
}
