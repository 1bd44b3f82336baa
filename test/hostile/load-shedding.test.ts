import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { Authenticator } from '../../src/http/auth.js';
import { silentLogger } from '../../src/logger.js';
import { openService, register, sleep } from '../support/helper.js';

/** 503 with retry-after while the event loop lags (src/http/load-shedding.ts), and only then. */

async function appWithShedding(maxEventLoopDelayMs: number, sampleIntervalMs = 50) {
  const service = await openService();
  const app = await buildApp({ service, authenticator: Authenticator.fromConfig({}), logger: silentLogger(), loadShedding: { maxEventLoopDelayMs, sampleIntervalMs } });
  register(() => app.close());
  return app;
}

const search = { method: 'POST' as const, url: '/search', payload: { query: 'q', user_id: 'u', top_k: 5 } };

/** Keeps the event loop blocked `blockMs` out of every ~`blockMs` until stopped: a process hopelessly behind. */
function hogEventLoop(blockMs = 80): () => void {
  let running = true;
  const spin = () => {
    if (!running) return;
    const until = Date.now() + blockMs;
    while (Date.now() < until);
    setTimeout(spin, 1);
  };
  setTimeout(spin, 1);
  return () => (running = false);
}

describe('load shedding', () => {
  it('answers 503 with retry-after and the error body while the event loop lags; /health still answers; then recovers', async () => {
    // Blocks shorter than the sample, so that every sample holds delay measurements (a sample
    // without any reads as no evidence: the 'one long stretch' test below), and far above the threshold.
    const app = await appWithShedding(15, 250);
    expect((await app.inject(search)).statusCode).toBe(200);

    const stop = hogEventLoop(60);
    let shed: Awaited<ReturnType<typeof app.inject>> | null = null;
    let health = 0;
    try {
      for (let attempt = 0; attempt < 80 && shed === null; attempt++) {
        await sleep(30);
        const response = await app.inject(search);
        if (response.statusCode === 503) {
          shed = response;
          health = (await app.inject({ method: 'GET', url: '/health' })).statusCode;
        }
      }
    } finally {
      stop();
    }
    expect(shed?.statusCode).toBe(503);
    expect(shed?.headers['retry-after']).toBe('1');
    expect(shed?.json().detail.reason).toMatch(/overloaded/i);
    expect(health).toBe(200);

    // Two samples after the lag ended: the next one measures an idle loop.
    await sleep(600);
    expect((await app.inject(search)).statusCode).toBe(200);
  });

  it('never sheds at a threshold of 0 (off), however far behind the loop is', async () => {
    const app = await appWithShedding(0);
    const stop = hogEventLoop();
    const statuses: number[] = [];
    try {
      for (let attempt = 0; attempt < 10; attempt++) {
        await sleep(30);
        statuses.push((await app.inject(search)).statusCode);
      }
    } finally {
      stop();
    }
    expect(new Set(statuses)).toEqual(new Set([200]));
  });

  it('does not shed after one long stretch of work that outlasts the sample (no delay measured in it)', async () => {
    const app = await appWithShedding(10_000);
    const statuses: number[] = [];
    for (let round = 0; round < 5; round++) {
      // One block far longer than the 50 ms sample, far shorter than the 10 s threshold.
      const until = Date.now() + 300;
      while (Date.now() < until);
      for (let attempt = 0; attempt < 4; attempt++) {
        statuses.push((await app.inject(search)).statusCode);
        await sleep(5);
      }
    }
    expect(new Set(statuses)).toEqual(new Set([200]));
  });
});
