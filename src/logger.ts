import { pino, type Logger } from 'pino';
import { currentRequestId } from './telemetry/tracing.js';

export type { Logger };

/**
 * Logs are JSON lines on stderr (stdout belongs to the CLI's JSON output). At the default level
 * nothing logs request bodies, queries or memory text: the platform's data serves the evaluation only.
 */
export function createLogger(level: string = 'info', destination: pino.DestinationStream = pino.destination({ fd: 2, sync: true })): Logger {
  return pino({ level, base: { service: 'memorypool' }, mixin: requestIdMixin }, destination);
}

/**
 * While tracing is on, every line written while a request's work runs names the request
 * (`reqId`, as fastify's own request logger does, and the `memorypool.request_id` of its spans),
 * so that logs and traces meet: lines from below the HTTP layer (a user's load, an index
 * rebuild) included (src/telemetry/tracing.ts, `inRequest`).
 */
function requestIdMixin(_object: object, _level: number, logger: Logger): object {
  const reqId = currentRequestId();
  if (reqId === undefined || 'reqId' in logger.bindings()) return {};
  return { reqId };
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
