import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/helper.js';
import { startReceiver as startOtlpReceiver } from '../support/otlp-receiver.js';
import { request, startServerProcess } from '../support/server-process.js';
import { startReceiver } from '../support/webhook-receiver.js';

describe('webhook delivery spans', () => {
  it('exports each attempt as a root span of its own: hook, seq, type, attempt, the answer, failed when the receiver failed', async () => {
    const otlp = await startOtlpReceiver();
    // The first attempt fails, the retry succeeds.
    const receiver = await startReceiver((attempt) => (attempt === 0 ? 502 : 200));
    const hooksFile = path.join(await tempDir(), 'hooks.json');
    await writeFile(hooksFile, JSON.stringify([{ id: 'traced', url: receiver.url, secret: 'whsec_span' }]));
    const server = await startServerProcess({
      dataDir: await tempDir(),
      env: { MEMORYPOOL_WEBHOOKS_FILE: hooksFile, MEMORYPOOL_WEBHOOKS_RETRY_MS: '20', OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50' },
    });
    expect((await request(`${server.url}/mem`, { body: { user_id: 'alice', text: 'alice likes tea' } })).status).toBe(201);
    await receiver.waitFor(() => receiver.accepted().length === 1);
    const isDelivery = (attempt: number) => (span: { name: string; attributes: Record<string, unknown> }) => span.name === 'memorypool.webhook.deliver' && span.attributes['memorypool.webhook.attempt'] === attempt;
    const [failed, succeeded] = [await otlp.waitFor(isDelivery(1)), await otlp.waitFor(isDelivery(2))];
    for (const span of [failed, succeeded]) {
      expect(span.parentSpanId).toBe('');
      expect(span.attributes).toMatchObject({ 'memorypool.webhook.id': 'traced', 'memorypool.change.seq': 1, 'memorypool.change.type': 'added' });
    }
    expect(failed.attributes['http.response.status_code']).toBe(502);
    // OTLP status codes: 2 error, 0 unset.
    expect(failed.statusCode).toBe(2);
    expect(succeeded.attributes['http.response.status_code']).toBe(200);
    expect(succeeded.statusCode).not.toBe(2);
    expect(failed.traceId).not.toBe(succeeded.traceId);
    await server.stop();
  });
});
