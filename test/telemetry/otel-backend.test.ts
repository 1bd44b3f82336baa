import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { createOtelBackend } from '../../src/telemetry/otel-backend.js';
import type { TracingBackend } from '../../src/telemetry/tracing.js';

/**
 * The backend in this process, against the SDK's in-memory exporter: what a child of a span its
 * sampler left out costs (nothing the SDK sees) and what it leaves the trace (its parent's place).
 * The tree of a real server's spans is test/telemetry/traces.test.ts.
 */

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

describe('the OpenTelemetry backend', () => {
  let backend: TracingBackend | null = null;
  afterEach(async () => {
    await backend?.shutdown();
    backend = null;
  });

  // What the batch processor hands its exporter, kept past the shutdown that flushes it.
  const open = (): { backend: TracingBackend; exported: ReadableSpan[] } => {
    const exported: ReadableSpan[] = [];
    const exporter: SpanExporter = {
      export: (spans, done) => {
        exported.push(...spans);
        done({ code: 0 });
      },
      shutdown: async () => {},
    };
    backend = createOtelBackend({ exporter, traceUserIds: false, serviceVersion: 'test' });
    return { backend, exported };
  };

  // The server span of a request whose caller did not sample its trace, and one that did.
  const request = (tracing: TracingBackend, flags: '00' | '01') => tracing.startServerSpan('POST /search', { 'http.route': '/search' }, { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-${flags}` });

  it('gives the children of a span left out no span of their own, and keeps the parent place for what they hand on', async () => {
    const { backend: tracing, exported } = open();
    const server = request(tracing, '00');
    expect(server.recording).toBe(false);
    const parentHeader = tracing.within(server, () => tracing.carrier().headers.traceparent);
    const inside = tracing.within(server, () => {
      const operation = tracing.startSpan('memorypool.search', { 'memorypool.operation': 'search' }, {});
      const carried = tracing.within(operation, () => {
        const retrieval = tracing.startSpan('memorypool.retrieval', undefined, {});
        retrieval.end();
        return tracing.carrier().headers.traceparent;
      });
      const recorded = tracing.startSpan('memorypool.encoder.run', undefined, { parent: operation });
      operation.end();
      return { operation, recorded, carried };
    });
    server.end();
    expect(inside.operation.recording).toBe(false);
    expect(inside.recorded.recording).toBe(false);
    // The same trace and parent, not sampled, whatever ran below it.
    expect(inside.carried).toBe(parentHeader);
    expect(inside.carried).toMatch(new RegExp(`^00-${CALLER_TRACE}-[0-9a-f]{16}-00$`));
    // A sampled request after it, so that an export that sends nothing at all cannot pass.
    const sampled = request(tracing, '01');
    sampled.end();
    await tracing.shutdown();
    backend = null;
    expect(exported.map((span) => span.spanContext().traceId)).toEqual([CALLER_TRACE]);
    expect(exported.map((span) => span.spanContext().traceFlags)).toEqual([1]);
  });

  it('records the children of a sampled span under it', async () => {
    const { backend: tracing, exported } = open();
    const server = request(tracing, '01');
    tracing.within(server, () => {
      const operation = tracing.startSpan('memorypool.search', undefined, {});
      tracing.within(operation, () => tracing.startSpan('memorypool.retrieval', undefined, {}).end());
      operation.end();
    });
    server.end();
    await tracing.shutdown();
    backend = null;
    const spans = exported;
    const byName = new Map(spans.map((span) => [span.name, span]));
    expect([...byName.keys()].sort()).toEqual(['POST /search', 'memorypool.retrieval', 'memorypool.search']);
    expect(byName.get('POST /search')!.parentSpanContext?.spanId).toBe(CALLER_SPAN);
    expect(byName.get('memorypool.search')!.parentSpanContext?.spanId).toBe(byName.get('POST /search')!.spanContext().spanId);
    expect(byName.get('memorypool.retrieval')!.parentSpanContext?.spanId).toBe(byName.get('memorypool.search')!.spanContext().spanId);
  });
});
