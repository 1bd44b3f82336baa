import { context, createContextKey, defaultTextMapGetter, defaultTextMapSetter, propagation, trace, SpanKind, SpanStatusCode, TraceFlags, type Context, type Span as OtelSpan, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { SENSITIVE_KEYS, type AttributeValue, type Attributes, type Span, type SpanOptions, type TraceCarrier, type TracingBackend } from './tracing.js';

/**
 * The OpenTelemetry SDK behind tracing.ts, imported only once tracing starts (tracing-start.ts):
 * a process without an OTLP endpoint never loads this file or any @opentelemetry package.
 * The SDK's own handling of the standard variables applies: the exporter reads the endpoint,
 * headers and timeout, the provider the sampler (OTEL_TRACES_SAMPLER, default parent-based
 * always-on) and the batch processor its OTEL_BSP_* settings; the resource is memorypool's
 * name and version under OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES.
 */

export interface OtelBackendOptions {
  exporter: SpanExporter;
  traceUserIds: boolean;
  serviceVersion: string;
}

class OtelSpanHandle implements Span {
  readonly recording: boolean;

  constructor(
    readonly span: OtelSpan,
    private readonly traceUserIds: boolean,
  ) {
    this.recording = span.isRecording();
  }

  setAttribute(key: string, value: AttributeValue | undefined): void {
    if (value === undefined || !this.recording || (!this.traceUserIds && SENSITIVE_KEYS.has(key))) return;
    this.span.setAttribute(key, value);
  }

  setAttributes(attributes: Attributes): void {
    if (!this.recording) return;
    for (const key in attributes) this.setAttribute(key, attributes[key]);
  }

  fail(error: unknown): void {
    if (!this.recording) return;
    const code = (error as { code?: unknown } | null)?.code;
    // The error's type and code only: a message may quote a user's input.
    this.span.setAttribute('error.type', typeof code === 'string' ? code : ((error as Error | null)?.name ?? 'Error'));
    this.span.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? code : undefined });
  }

  end(endMs?: number): void {
    this.span.end(endMs === undefined ? undefined : epochMs(endMs));
  }
}

/**
 * A time given in this thread's performance.now() as epoch milliseconds: the SDK reads a small
 * number as a performance time and converts a start and an end differently (by its anchored
 * clock for ends), so that a child span recorded with the times of its parent's edges could
 * appear to stick out of it by microseconds.
 */
function epochMs(ms: number): number {
  return performance.timeOrigin + ms;
}

/**
 * The child of a span its trace's sampler left out. Every sampler the SDK builds from
 * OTEL_TRACES_SAMPLER decides a child as it decided the parent here (the parent-based ones follow
 * it, the ratio one reads the same trace id, always_off refuses both; always_on leaves no parent
 * out), so the child records nothing either: it needs no id, no context of its own and no call
 * into the SDK, and the work under it runs in its parent's context. What a trace in ten costs the
 * other nine (bench/tracing-cost.ts, `sampled`).
 */
const UNSAMPLED_CHILD: Span = { recording: false, setAttribute() {}, setAttributes() {}, fail() {}, end() {} };

/** The request id in the trace's context (tracing.ts, `inRequest`): one AsyncLocalStorage carries both. */
const REQUEST_ID_KEY = createContextKey('memorypool.request_id');

export function createOtelBackend(options: OtelBackendOptions): TracingBackend {
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'memorypool', 'service.version': options.serviceVersion }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(options.exporter)] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  const propagator = new W3CTraceContextPropagator();
  // Registered for whatever else in the process traces; this file uses its own references, which
  // spares each span the API's lookup of the global (measured: ~0.4% of a traced Search's CPU).
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(propagator);
  trace.setGlobalTracerProvider(provider);
  const tracer: Tracer = provider.getTracer('memorypool', options.serviceVersion);
  const { traceUserIds } = options;

  const kept = (attributes: Attributes | undefined): Record<string, AttributeValue> => {
    const out: Record<string, AttributeValue> = {};
    if (attributes) for (const key in attributes) if (attributes[key] !== undefined && (traceUserIds || !SENSITIVE_KEYS.has(key))) out[key] = attributes[key];
    return out;
  };
  const handle = (span: OtelSpan): Span => new OtelSpanHandle(span, traceUserIds);
  const parentContext = (parent: Span | undefined): Context =>
    parent instanceof OtelSpanHandle ? trace.setSpan(contextManager.active(), parent.span) : contextManager.active();

  return {
    startSpan(name: string, attributes: Attributes | undefined, spanOptions: SpanOptions): Span {
      if (spanOptions.parent === UNSAMPLED_CHILD) return UNSAMPLED_CHILD;
      // The parent's flags before any context is built: a child left out needs none.
      const parentSpan = spanOptions.parent instanceof OtelSpanHandle ? spanOptions.parent.span : trace.getSpan(contextManager.active());
      if (parentSpan !== undefined && (parentSpan.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return UNSAMPLED_CHILD;
      const startTime = spanOptions.startMs === undefined ? undefined : epochMs(spanOptions.startMs);
      return handle(tracer.startSpan(name, { attributes: kept(attributes), startTime }, parentContext(spanOptions.parent)));
    },
    startServerSpan(name, attributes, headers): Span {
      const callers = propagator.extract(contextManager.active(), headers, defaultTextMapGetter);
      return handle(tracer.startSpan(name, { kind: SpanKind.SERVER, attributes: kept(attributes) }, callers));
    },
    within<T>(span: Span, fn: () => T): T {
      if (!(span instanceof OtelSpanHandle)) return fn();
      return contextManager.with(trace.setSpan(contextManager.active(), span.span), fn);
    },
    inRequest<T>(requestId: string, span: Span | null, fn: () => T): T {
      const withId = contextManager.active().setValue(REQUEST_ID_KEY, requestId);
      return contextManager.with(span instanceof OtelSpanHandle ? trace.setSpan(withId, span.span) : withId, fn);
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
