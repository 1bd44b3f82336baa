import underPressure from '@fastify/under-pressure';
import type { FastifyInstance } from 'fastify';
import { createError } from '../errors.js';

/**
 * Sheds load when the process is already behind: while the event loop's mean delay over the
 * last sample exceeds the threshold, new requests get a 503 with `retry-after` at once instead
 * of joining a queue that only grows (every queued request would wait for all the ones before
 * it, and time out anyway). The delay is about the longest stretch of uninterrupted work in
 * the sample, and a busy server has long ones (a batch of query vectors comes back and its
 * searches are scored back to back: 1.7 s at 256 clients on a starved 2-core machine in the
 * bench), so the default threshold (10 s, config.ts) is far above that: it acts only on a process
 * that stopped answering. /health keeps answering: a load balancer should see it alive and busy.
 * One warning per episode, not per request: shedding is when logs must stay cheap.
 */
export interface LoadSheddingOptions {
  /** Mean event-loop delay (ms) over a sample above which requests are shed; 0 turns shedding off. */
  maxEventLoopDelayMs: number;
  /** How often the delay is sampled (ms). */
  sampleIntervalMs?: number;
}

export async function registerLoadShedding(app: FastifyInstance, options: LoadSheddingOptions): Promise<void> {
  if (options.maxEventLoopDelayMs <= 0) return;
  // The delay is re-measured once per sample: one warning per new measurement that sheds.
  let lastWarned = -1;
  await app.register(underPressure, {
    maxEventLoopDelay: options.maxEventLoopDelayMs,
    sampleInterval: options.sampleIntervalMs ?? 1_000,
    // Our error handler writes the body and `retry-after` of every 503.
    pressureHandler: async (request, _reply, type, value) => {
      if (request.routeOptions.url === '/health') return;
      // under-pressure reports a sample without a single delay measurement as Infinity: it
      // happens when one stretch of work outlasts the sample interval (the measuring timer then
      // fires after the sample is taken). That says nothing of the delay, so it sheds nothing;
      // a real lag above the threshold shows as a finite mean in the next sample.
      if (value === undefined || !Number.isFinite(value)) return;
      const delay = Math.round(value);
      if (delay !== lastWarned) request.log.warn({ type, value: delay }, 'overloaded: shedding requests');
      lastWarned = delay;
      throw createError('OVERLOADED', `Service is overloaded (event-loop delay ${delay} ms): retry shortly`);
    },
  });
}
