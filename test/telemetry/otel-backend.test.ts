import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode, trace } from '@opentelemetry/api';
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

/** What the batch processor hands its exporter, kept past the shutdown that flushes it. */
function keptExports(): { exporter: SpanExporter; exported: ReadableSpan[] } {
  const exported: ReadableSpan[] = [];
  const exporter: SpanExporter = {
    export: (spans, done) => {
      exported.push(...spans);
      done({ code: 0 });
    },
    shutdown: async () => {},
  };
  return { exporter, exported };
}

describe('the OpenTelemetry backend', () => {
  let backend: TracingBackend | null = null;
  afterEach(async () => {
    await backend?.shutdown();
    backend = null;
  });

  const open = (): { backend: TracingBackend; exported: ReadableSpan[] } => {
    const { exporter, exported } = keptExports();
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

describe('the spans the backend records', () => {
  let backend: TracingBackend | null = null;
  const saved = { ...process.env };
  afterEach(async () => {
    await backend?.shutdown();
    backend = null;
    for (const key of Object.keys(process.env)) if (key.startsWith('OTEL_') && saved[key] === undefined) delete process.env[key];
    Object.assign(process.env, saved);
  });

  // The backend built under `env` (the SDK reads the standard variables when it is created), and what its exporter was handed.
  const open = (env: Record<string, string> = {}, traceUserIds = false): { tracing: TracingBackend; flushed: () => Promise<ReadableSpan[]> } => {
    Object.assign(process.env, env);
    const { exporter, exported } = keptExports();
    const tracing = createOtelBackend({ exporter, traceUserIds, serviceVersion: 'test' });
    backend = tracing;
    return {
      tracing,
      flushed: async () => {
        await tracing.shutdown();
        backend = null;
        return exported;
      },
    };
  };
  const traceparent = (flags: '00' | '01') => ({ traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-${flags}` });

  it('samples as OTEL_TRACES_SAMPLER says: always_off records nothing and hands on an unsampled place', async () => {
    const { tracing, flushed } = open({ OTEL_TRACES_SAMPLER: 'always_off' });
    const server = tracing.startServerSpan('POST /search', {}, {});
    expect(server.recording).toBe(false);
    const header = tracing.within(server, () => {
      const child = tracing.startSpan('memorypool.search', undefined, {});
      expect(child.recording).toBe(false);
      child.end();
      return tracing.carrier().headers.traceparent;
    });
    server.end();
    expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    expect(header).not.toMatch(/^00-0{32}-/);
    expect(await flushed()).toEqual([]);
  });

  it("follows a caller's decision by default, and overrides it when the sampler is always_on", async () => {
    const followed = open();
    expect(followed.tracing.startServerSpan('POST /search', {}, traceparent('00')).recording).toBe(false);
    const kept = followed.tracing.startServerSpan('POST /search', {}, traceparent('01'));
    expect(kept.recording).toBe(true);
    kept.end();
    expect((await followed.flushed()).map((span) => span.parentSpanContext?.spanId)).toEqual([CALLER_SPAN]);

    const always = open({ OTEL_TRACES_SAMPLER: 'always_on' });
    const overridden = always.tracing.startServerSpan('POST /search', {}, traceparent('00'));
    expect(overridden.recording).toBe(true);
    overridden.end();
    const [span] = await always.flushed();
    expect(span.spanContext().traceId).toBe(CALLER_TRACE);
    expect(span.parentSpanContext?.spanId).toBe(CALLER_SPAN);
  });

  it('keeps a ratio sampler at ratio 0 from recording a root, and at 1 records it', async () => {
    const none = open({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0' });
    for (let i = 0; i < 20; i++) none.tracing.startSpan('memorypool.deliver', undefined, {}).end();
    expect(await none.flushed()).toEqual([]);
    const all = open({ OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' });
    for (let i = 0; i < 20; i++) all.tracing.startSpan('memorypool.deliver', undefined, {}).end();
    expect(await all.flushed()).toHaveLength(20);
  });

  it('gives every span an id of its own, valid hex, across many spans', async () => {
    const { tracing, flushed } = open();
    const root = tracing.startServerSpan('POST /add', {}, {});
    tracing.within(root, () => {
      for (let i = 0; i < 1500; i++) tracing.startSpan('memorypool.store.append', undefined, {}).end();
    });
    root.end();
    const spans = await flushed();
    expect(spans).toHaveLength(1501);
    const ids = spans.map((span) => span.spanContext().spanId);
    expect(new Set(ids).size).toBe(1501);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{16}$/);
    expect(new Set(spans.map((span) => span.spanContext().traceId)).size).toBe(1);
    expect(spans[0].spanContext().traceId).toMatch(/^[0-9a-f]{32}$/);
  });

  it('times a child within its parent, near the wall clock, and keeps the times a caller measured', async () => {
    const { tracing, flushed } = open();
    const before = Date.now();
    const root = tracing.startServerSpan('POST /search', {}, {});
    const measuredStart = performance.now();
    tracing.within(root, () => {
      const child = tracing.startSpan('memorypool.retrieval', undefined, {});
      for (let i = 0; i < 1e5; i++) Math.sqrt(i);
      child.end();
    });
    const measuredEnd = measuredStart + 2.5;
    tracing.startSpan('memorypool.encoder.thread', undefined, { startMs: measuredStart, parent: root }).end(measuredEnd);
    root.end();
    const after = Date.now();
    const byName = new Map((await flushed()).map((span) => [span.name, span]));
    const ms = (time: [number, number]) => time[0] * 1000 + time[1] / 1e6;
    const server = byName.get('POST /search')!;
    const child = byName.get('memorypool.retrieval')!;
    expect(ms(server.startTime)).toBeGreaterThanOrEqual(before - 1);
    expect(ms(server.endTime)).toBeLessThanOrEqual(after + 1);
    expect(ms(child.startTime)).toBeGreaterThanOrEqual(ms(server.startTime));
    expect(ms(child.endTime)).toBeLessThanOrEqual(ms(server.endTime));
    expect(ms(child.endTime)).toBeGreaterThan(ms(child.startTime));
    const thread = byName.get('memorypool.encoder.thread')!;
    expect(ms(thread.endTime) - ms(thread.startTime)).toBeCloseTo(2.5, 3);
    expect(child.duration[0] * 1000 + child.duration[1] / 1e6).toBeCloseTo(ms(child.endTime) - ms(child.startTime), 3);
  });

  it("keeps users' ids and texts off spans unless told, applies the SDK's attribute limits, and marks a failure by its code", async () => {
    const { tracing, flushed } = open({ OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT: '3', OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT: '5' });
    const span = tracing.startSpan('memorypool.search', { 'user.id': 'alice', 'memorypool.query': 'where?', a: 'abcdefgh', b: ['123456', 'x'], c: 1 }, {});
    span.setAttribute('d', 2);
    span.setAttribute('a', 'xy');
    span.fail(Object.assign(new Error('alice said something'), { code: 'not_found' }));
    span.end();
    span.setAttribute('e', 3);
    const [exported] = await flushed();
    expect(exported.attributes).toEqual({ a: 'xy', b: ['12345', 'x'], c: 1 });
    expect(exported.droppedAttributesCount).toBe(2);
    expect(exported.status).toEqual({ code: 2, message: 'not_found' });

    const told = open({}, true);
    told.tracing.startSpan('memorypool.search', { 'user.id': 'alice' }, {}).end();
    expect((await told.flushed())[0].attributes).toEqual({ 'user.id': 'alice' });
  });

  it("is the API's span in its context: other instrumentation can add events and children to it", async () => {
    const { tracing, flushed } = open();
    const root = tracing.startServerSpan('POST /mcp', {}, {});
    tracing.within(root, () => {
      const active = trace.getActiveSpan()!;
      expect(active.isRecording()).toBe(true);
      active.addEvent('cache.miss', { 'memorypool.units': 3 });
      active.setStatus({ code: SpanStatusCode.OK });
      trace.getTracer('other').startSpan('other.work').end();
    });
    root.end();
    const byName = new Map((await flushed()).map((span) => [span.name, span]));
    const server = byName.get('POST /mcp')!;
    expect(server.events.map((event) => [event.name, event.attributes])).toEqual([['cache.miss', { 'memorypool.units': 3 }]]);
    expect(server.status.code).toBe(SpanStatusCode.OK);
    expect(byName.get('other.work')!.parentSpanContext?.spanId).toBe(server.spanContext().spanId);
  });
});
