import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { startTracing } from '../../src/telemetry/tracing-start.js';
import { currentRequestId, inRequest, tracingEnabled } from '../../src/telemetry/tracing.js';
import { register, sleep } from '../support/helper.js';
import { startReceiver } from '../support/otlp-receiver.js';

/**
 * Log lines written below the HTTP layer while a request's work runs carry its id, as fastify's
 * request logger's do, while tracing is on (so that logs and traces meet); a process that does
 * not trace keeps no request scope (its AsyncLocalStorage would cost every request).
 */

function capturedLogger(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
  return { logger, lines };
}

async function traced(): Promise<void> {
  const receiver = await startReceiver();
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiver.url;
  const tracing = await startTracing({ protocol: 'http/json', traceUserIds: false, serviceVersion: 'test' });
  register(async () => {
    await tracing.shutdown();
    delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
  });
}

describe('request ids in log lines', () => {
  it('names the request in every line its work writes, across awaits, and in no line outside it', async () => {
    await traced();
    const { logger, lines } = capturedLogger();
    logger.info('before');
    // req-a waits for req-b's line, so the order is fixed however the timers fall on a loaded
    // machine (two sleeps of 1 and 5 ms once came back the other way round in CI).
    let bLogged!: () => void;
    const afterB = new Promise<void>((resolve) => (bLogged = resolve));
    await Promise.all([
      inRequest('req-a', null, async () => {
        await afterB;
        await sleep(1);
        expect(currentRequestId()).toBe('req-a');
        logger.warn('loading a user');
      }),
      inRequest('req-b', null, async () => {
        await sleep(1);
        logger.warn('rebuilding an index');
        bLogged();
      }),
    ]);
    logger.info('after');
    const parsed = lines.map((line) => JSON.parse(line) as { msg: string; reqId?: string });
    expect(parsed.map(({ msg, reqId }) => [msg, reqId])).toEqual([
      ['before', undefined],
      ['rebuilding an index', 'req-b'],
      ['loading a user', 'req-a'],
      ['after', undefined],
    ]);
    expect(currentRequestId()).toBeUndefined();
  });

  it("leaves fastify's request logger its own reqId (no second key)", async () => {
    await traced();
    const { logger, lines } = capturedLogger();
    inRequest('req-a', null, () => logger.child({ reqId: 'req-a' }).info('request'));
    expect(lines).toHaveLength(1);
    expect(lines[0].match(/"reqId"/g)).toHaveLength(1);
  });

  it('keeps no request scope while tracing is off', async () => {
    expect(tracingEnabled()).toBe(false);
    const { logger, lines } = capturedLogger();
    await inRequest('req-a', null, async () => {
      await sleep(1);
      expect(currentRequestId()).toBeUndefined();
      logger.warn('loading a user');
    });
    expect((JSON.parse(lines[0]) as { reqId?: string }).reqId).toBeUndefined();
  });
});
