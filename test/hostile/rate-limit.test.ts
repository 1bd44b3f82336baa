import { describe, expect, it } from 'vitest';
import { buildApp } from '../../src/http/app.js';
import { Authenticator } from '../../src/http/auth.js';
import type { RateLimitOptions } from '../../src/http/rate-limit.js';
import { silentLogger } from '../../src/logger.js';
import { openService, register, sleep } from '../support/helper.js';
import { startEdgeServer } from './edge-server.js';

/** Optional per-token rate limits (src/http/rate-limit.ts): 429 with retry-after past the limit, never when off. */

/** An app limited as given; open (keyed by address) with no tokens, else requiring the first. */
async function appWithLimit(rateLimit: RateLimitOptions, tokens: string[]) {
  const service = await openService();
  const authenticator = tokens.length === 0 ? new Authenticator([]) : Authenticator.fromConfig({ token: tokens[0] });
  const app = await buildApp({ service, authenticator, logger: silentLogger(), rateLimit });
  register(() => app.close());
  return app;
}

const search = (token?: string) => ({
  method: 'POST' as const,
  url: '/search',
  payload: { query: 'q', user_id: 'u', top_k: 5 },
  headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
});

describe('rate limits', () => {
  it('past the limit a token gets 429 with retry-after and the error body; bad credentials are a 401 and do not count', async () => {
    const app = await appWithLimit({ max: 3, windowMs: 60_000 }, ['secret-token-a']);
    expect((await app.inject(search('wrong-token'))).statusCode).toBe(401);
    for (let i = 0; i < 3; i++) expect((await app.inject(search('secret-token-a'))).statusCode).toBe(200);
    const limited = await app.inject(search('secret-token-a'));
    expect(limited.statusCode).toBe(429);
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(limited.json().detail.reason).toMatch(/at most 3 requests per 1 minute/);
    expect((await app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });

  it('each token has its own budget (scoped tokens from a tokens file)', async () => {
    const service = await openService();
    const { createHash } = await import('node:crypto');
    const grant = (token: string) => ({ digest: createHash('sha256').update(token).digest(), userPrefixes: null });
    const app = await buildApp({ service, authenticator: new Authenticator([grant('token-one'), grant('token-two')]), logger: silentLogger(), rateLimit: { max: 2, windowMs: 60_000 } });
    register(() => app.close());
    for (let i = 0; i < 2; i++) expect((await app.inject(search('token-one'))).statusCode).toBe(200);
    expect((await app.inject(search('token-one'))).statusCode).toBe(429);
    expect((await app.inject(search('token-two'))).statusCode).toBe(200);
  });

  it('the window frees requests again', async () => {
    const app = await appWithLimit({ max: 1, windowMs: 300 }, []);
    expect((await app.inject(search())).statusCode).toBe(200);
    expect((await app.inject(search())).statusCode).toBe(429);
    await sleep(400);
    expect((await app.inject(search())).statusCode).toBe(200);
  });

  it('is off by default: 300 requests from one client in a burst are all answered', async () => {
    const server = await startEdgeServer();
    const statuses = await Promise.all(
      Array.from({ length: 300 }, () =>
        fetch(`${server.url}/search`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: 'q', user_id: 'u', top_k: 5 }) }).then((response) => response.status),
      ),
    );
    expect(new Set(statuses)).toEqual(new Set([200]));
  });
});
