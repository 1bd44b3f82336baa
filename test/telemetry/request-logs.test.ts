import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { currentRequestId, inRequest } from '../../src/telemetry/tracing.js';
import { sleep } from '../support/helper.js';

/** Log lines written below the HTTP layer while a request's work runs carry its id, as fastify's request logger's do. */

function capturedLogger(): { logger: ReturnType<typeof createLogger>; lines: string[] } {
  const lines: string[] = [];
  const logger = createLogger('info', { write: (line: string) => void lines.push(line) });
  return { logger, lines };
}

describe('request ids in log lines', () => {
  it('names the request in every line its work writes, across awaits, and in no line outside it', async () => {
    const { logger, lines } = capturedLogger();
    logger.info('before');
    await Promise.all([
      inRequest('req-a', null, async () => {
        await sleep(5);
        expect(currentRequestId()).toBe('req-a');
        logger.warn('loading a user');
      }),
      inRequest('req-b', null, async () => {
        await sleep(1);
        logger.warn('rebuilding an index');
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

  it("leaves fastify's request logger its own reqId (no second key)", () => {
    const { logger, lines } = capturedLogger();
    inRequest('req-a', null, () => logger.child({ reqId: 'req-a' }).info('request'));
    expect(lines).toHaveLength(1);
    expect(lines[0].match(/"reqId"/g)).toHaveLength(1);
  });
});
