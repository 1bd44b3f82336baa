import { describe, expect, it } from 'vitest';
import { BatchingEmbedder } from '../../src/embedding/batching-embedder.js';
import { EncoderPool } from '../../src/embedding/encoder-pool.js';
import { QueryVectorCache } from '../../src/embedding/query-vector-cache.js';
import { buildApp } from '../../src/http/app.js';
import { Authenticator } from '../../src/http/auth.js';
import { silentLogger } from '../../src/logger.js';
import { build, openService, register, testEmbedder } from '../support/helper.js';

const auth = { authorization: 'Bearer secret-token' };

/** The value of one sample line (`name{labels} value`), or undefined when it is absent. */
function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((candidate) => candidate.startsWith(line + ' '));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('GET /metrics', () => {
  it('counts requests by route pattern and status, and times them', async () => {
    const { app } = await build({ token: 'secret-token' });
    const added = await app.inject({ method: 'POST', url: '/mem', headers: auth, payload: { text: 'Caroline adopted a dog named Max' } });
    await app.inject({ method: 'GET', url: `/mem/${added.json().id}`, headers: auth });
    await app.inject({ method: 'GET', url: '/mem/no-such-id', headers: auth });
    await app.inject({ method: 'GET', url: '/mem/search?q=dog', headers: auth });
    await app.inject({ method: 'POST', url: '/search', headers: auth, payload: { query: 'dog', user_id: 'default', top_k: 3 } });
    await app.inject({ method: 'GET', url: '/mem/list' });
    await app.inject({ method: 'GET', url: '/nowhere', headers: auth });

    const response = await app.inject({ method: 'GET', url: '/metrics', headers: auth });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = response.body;
    expect(sample(text, 'memorypool_http_requests_total{method="POST",route="/mem",status="201"}')).toBe(1);
    // Ids stay out of the labels: both lookups count under the route's pattern.
    expect(sample(text, 'memorypool_http_requests_total{method="GET",route="/mem/:id",status="200"}')).toBe(1);
    expect(sample(text, 'memorypool_http_requests_total{method="GET",route="/mem/:id",status="404"}')).toBe(1);
    expect(sample(text, 'memorypool_http_requests_total{method="GET",route="/mem/list",status="401"}')).toBe(1);
    expect(sample(text, 'memorypool_http_requests_total{method="GET",route="unmatched",status="404"}')).toBe(1);
    expect(text).not.toContain('no-such-id');
    expect(text).not.toContain('dog');
    expect(sample(text, 'memorypool_http_request_duration_seconds_count{method="POST",route="/search"}')).toBe(1);
    expect(sample(text, 'memorypool_http_request_duration_seconds_count{method="GET",route="/mem/search"}')).toBe(1);
    expect(sample(text, 'memorypool_memories')).toBe(1);
    expect(sample(text, 'memorypool_users')).toBe(1);
    expect(sample(text, 'memorypool_index_rebuilds_in_progress')).toBe(0);
    // The process defaults.
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_heap_size_used_bytes \d/m);
  });

  it('reports encoder batch sizes, queue waits and run times from the pooled embedder', async () => {
    // Wrapped as createEmbedder wraps the ONNX and HTTP embedders: the cache of query vectors outside.
    const { app } = await build({ service: { embedder: new QueryVectorCache(new BatchingEmbedder(testEmbedder())) } });
    await Promise.all([
      app.inject({ method: 'POST', url: '/add', payload: { request_id: 'r1', user_id: 'u', session_id: 's', messages: [{ role: 'a', content: 'one' }, { role: 'b', content: 'two' }] } }),
      app.inject({ method: 'POST', url: '/add', payload: { request_id: 'r2', user_id: 'u', session_id: 's', messages: [{ role: 'a', content: 'three' }] } }),
    ]);
    const text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
    const batches = sample(text, 'memorypool_encoder_batch_size_count')!;
    const texts = sample(text, 'memorypool_encoder_batch_size_sum')!;
    expect(batches).toBeGreaterThanOrEqual(1);
    expect(texts).toBe(3);
    expect(sample(text, 'memorypool_encoder_queue_wait_seconds_count')).toBe(3);
    expect(sample(text, 'memorypool_encoder_run_seconds_count')).toBe(batches);
    expect(sample(text, 'memorypool_memories')).toBe(3);
    // One model, no pool of copies: no copies to count.
    expect(text).not.toContain('memorypool_encoder_copies');
  });

  it('counts the encoder copies loaded, where the encoder is a pool of them', async () => {
    const copies = [testEmbedder(), testEmbedder()];
    const pool = new EncoderPool(copies);
    const { app } = await build({ service: { embedder: new QueryVectorCache(new BatchingEmbedder(pool, { maxInFlight: () => pool.running })) } });
    await app.inject({ method: 'POST', url: '/add', payload: { request_id: 'r1', user_id: 'u', session_id: 's', messages: [{ role: 'a', content: 'one' }] } });
    expect(sample((await app.inject({ method: 'GET', url: '/metrics' })).body, 'memorypool_encoder_copies')).toBe(1);
    await pool.loadedAll();
    expect(sample((await app.inject({ method: 'GET', url: '/metrics' })).body, 'memorypool_encoder_copies')).toBe(2);
  });

  it('needs the token unless MEMORYPOOL_METRICS_PUBLIC is set', async () => {
    const { app } = await build({ token: 'secret-token' });
    expect((await app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);

    const service = await openService();
    const open = await buildApp({ service, authenticator: Authenticator.fromConfig({ token: 'secret-token' }), logger: silentLogger(), metricsPublic: true });
    register(() => open.close());
    expect((await open.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
    // Only the metrics: every other route still needs the token.
    expect((await open.inject({ method: 'GET', url: '/mem/list' })).statusCode).toBe(401);
  });
});
