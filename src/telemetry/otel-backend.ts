import { context, createContextKey, defaultTextMapGetter, defaultTextMapSetter, propagation, trace, SpanKind, TraceFlags, SamplingDecision, type Context, type Span as OtelSpan } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { buildSamplerFromEnv } from '@opentelemetry/sdk-trace-base/build/src/config.js';
import { reconfigureLimits } from '@opentelemetry/sdk-trace-base/build/src/utility.js';
import { nextSpanId, nextTraceId, RecordedSpan, wallClockAnchor, type SpanRecorder } from './recorded-span.js';
import { SENSITIVE_KEYS, type AttributeValue, type Attributes, type Span, type SpanOptions, type TraceCarrier, type TracingBackend } from './tracing.js';

/**
 * The OpenTelemetry SDK behind tracing.ts, imported only once tracing starts (tracing-start.ts):
 * a process without an OTLP endpoint never loads this file or any @opentelemetry package.
 * The SDK's own handling of the standard variables applies: the exporter reads the endpoint,
 * headers and timeout, the sampler is the one the SDK builds from OTEL_TRACES_SAMPLER(_ARG)
 * (default parent-based always-on), the span limits its OTEL_*ATTRIBUTE* ones, the batch
 * processor its OTEL_BSP_* settings; the resource is memorypool's name and version under
 * OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. Spans are recorded by recorded-span.ts and
 * handed to that processor; the SDK's TracerProvider is registered for anything else in the
 * process that traces.
 */

export interface OtelBackendOptions {
  exporter: SpanExporter;
  traceUserIds: boolean;
  serviceVersion: string;
}

/**
 * A span its trace's sampler left out, kept for its place in the trace (its context is handed on
 * in a `traceparent` with the sampled flag off). Every sampler the SDK builds from
 * OTEL_TRACES_SAMPLER decides a child as it decided the parent here (the parent-based ones
 * follow it, the ratio one reads the same trace id, always_off refuses both; always_on leaves no
 * parent out), so its children are UNSAMPLED_CHILD: they need no id, no context of their own and
 * no call into the SDK, and the work under them runs in this span's context. For the same reason
 * a child of a sampled span in this thread is recorded without asking the sampler.
 */
class UnsampledSpan implements Span {
  readonly recording = false;
  constructor(readonly span: OtelSpan) {}
  setAttribute(): void {}
  setAttributes(): void {}
  fail(): void {}
  end(): void {}
}

/** What a trace in ten costs the other nine (bench/tracing-cost.ts, `sampled`). */
const UNSAMPLED_CHILD: Span = { recording: false, setAttribute() {}, setAttributes() {}, fail() {}, end() {} };

/** The request id in the trace's context (tracing.ts, `inRequest`): one AsyncLocalStorage carries both. */
const REQUEST_ID_KEY = createContextKey('memorypool.request_id');

export function createOtelBackend(options: OtelBackendOptions): TracingBackend {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'memorypool', 'service.version': options.serviceVersion }))
    .merge(detectResources({ detectors: [envDetector] }));
  const sampler = buildSamplerFromEnv();
  const processor = new BatchSpanProcessor(options.exporter);
  const provider = new BasicTracerProvider({ resource, sampler, spanProcessors: [processor] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  const propagator = new W3CTraceContextPropagator();
  // Registered for whatever else in the process traces; this file uses its own references, which
  // spares each span the API's lookup of the global (measured: ~0.4% of a traced Search's CPU).
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(propagator);
  trace.setGlobalTracerProvider(provider);
  const { spanLimits } = reconfigureLimits({});
  const recorder: SpanRecorder = {
    processor,
    resource,
    scope: { name: 'memorypool', version: options.serviceVersion },
    traceUserIds: options.traceUserIds,
    attributeCountLimit: spanLimits?.attributeCountLimit ?? 128,
    attributeValueLengthLimit: spanLimits?.attributeValueLengthLimit ?? Infinity,
  };

  /**
   * A span under `parent` (a span of this thread, or the API's span a context holds: a remote
   * caller's or another thread's, or another instrumentation's), or the root of a new trace.
   * Only a root or a span continuing someone else's span asks the sampler.
   */
  const start = (name: string, kind: SpanKind, attributes: Attributes | undefined, parent: OtelSpan | undefined, parentContext: Context, startMs: number | undefined): Span => {
    if (parent instanceof RecordedSpan) {
      const span = new RecordedSpan(recorder, name, kind, parent.spanContext().traceId, parent.spanContext(), parent.spanContext().traceState, parent.anchorMs, startMs ?? performance.now());
      if (attributes !== undefined) span.setAttributes(attributes);
      return span;
    }
    const parentSpanContext = parent?.spanContext();
    const continuing = parentSpanContext !== undefined && trace.isSpanContextValid(parentSpanContext);
    // A caller's decision is its sampler's to follow or not; an unsampled span of this process has unsampled children.
    if (continuing && kind !== SpanKind.SERVER && (parentSpanContext.traceFlags & TraceFlags.SAMPLED) === 0) return UNSAMPLED_CHILD;
    const traceId = continuing ? parentSpanContext.traceId : nextTraceId();
    const sampled = sampler.shouldSample(parentContext, traceId, name, kind, kept(attributes), []);
    const traceState = sampled.traceState ?? (continuing ? parentSpanContext.traceState : undefined);
    if (sampled.decision !== SamplingDecision.RECORD_AND_SAMPLED) {
      // Left out (a RECORD decision too: the batch processor exports only sampled spans).
      return new UnsampledSpan(trace.wrapSpanContext({ traceId, spanId: nextSpanId(), traceFlags: TraceFlags.NONE, traceState }));
    }
    const span = new RecordedSpan(recorder, name, kind, traceId, continuing ? parentSpanContext : undefined, traceState, wallClockAnchor(), startMs ?? performance.now());
    if (attributes !== undefined) span.setAttributes(attributes);
    if (sampled.attributes !== undefined) span.setAttributes(sampled.attributes);
    return span;
  };
  const kept = (attributes: Attributes | undefined): Record<string, AttributeValue> => {
    const out: Record<string, AttributeValue> = {};
    if (attributes) for (const key in attributes) if (attributes[key] !== undefined && (options.traceUserIds || !SENSITIVE_KEYS.has(key))) out[key] = attributes[key];
    return out;
  };
  const apiSpan = (span: Span): OtelSpan | undefined => (span instanceof RecordedSpan ? span : span instanceof UnsampledSpan ? span.span : undefined);

  return {
    startSpan(name: string, attributes: Attributes | undefined, spanOptions: SpanOptions): Span {
      const { parent } = spanOptions;
      if (parent === UNSAMPLED_CHILD || parent instanceof UnsampledSpan) return UNSAMPLED_CHILD;
      const active = contextManager.active();
      return start(name, SpanKind.INTERNAL, attributes, parent instanceof RecordedSpan ? parent : trace.getSpan(active), active, spanOptions.startMs);
    },
    startServerSpan(name, attributes, headers): Span {
      const callers = propagator.extract(contextManager.active(), headers, defaultTextMapGetter);
      return start(name, SpanKind.SERVER, attributes, trace.getSpan(callers), callers, undefined);
    },
    within<T>(span: Span, fn: () => T): T {
      const held = apiSpan(span);
      return held === undefined ? fn() : contextManager.with(trace.setSpan(contextManager.active(), held), fn);
    },
    inRequest<T>(requestId: string, span: Span | null, fn: () => T): T {
      const withId = contextManager.active().setValue(REQUEST_ID_KEY, requestId);
      const held = span === null ? undefined : apiSpan(span);
      return contextManager.with(held === undefined ? withId : trace.setSpan(withId, held), fn);
    },
    requestId(): string | undefined {
      return contextManager.active().getValue(REQUEST_ID_KEY) as string | undefined;
    },
    carrier(): TraceCarrier {
      const active = contextManager.active();
      const headers: Record<string, string> = {};
      propagator.inject(active, headers, defaultTextMapSetter);
      return { headers, requestId: active.getValue(REQUEST_ID_KEY) as string | undefined };
    },
    continued<T>(carrier: TraceCarrier, fn: () => T): T {
      let continuing = propagator.extract(contextManager.active(), carrier.headers, defaultTextMapGetter);
      if (carrier.requestId !== undefined) continuing = continuing.setValue(REQUEST_ID_KEY, carrier.requestId);
      return contextManager.with(continuing, fn);
    },
    async shutdown(): Promise<void> {
      await provider.shutdown();
      trace.disable();
      propagation.disable();
      context.disable();
    },
  };
}
