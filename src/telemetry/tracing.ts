/**
 * Spans for the operator's tracing backend, and the request id every log line of a request
 * carries. This file is all that is loaded until tracing starts: it names no OpenTelemetry
 * package, and each call below is one null check while no backend is installed (the no-op path a
 * cached Search pays: bench/tracing-cost.ts). `startTracing` (tracing-start.ts) installs the
 * OpenTelemetry backend (otel-backend.ts) when the OTLP endpoint is configured.
 *
 * The API, for every layer (see docs/operations.md, "Traces"):
 * - `withSpan(name, attributes, fn)`: `fn` runs as the current span (spans started inside are its
 *   children); a promise it returns ends the span when it settles, a rejection marks it failed.
 * - `startSpan(name, attributes)`: a child of the current span that the caller ends (work that
 *   outlives the call: a queued encoder job, a webhook delivery's retries).
 * - `recordSpan(name, attributes, startMs, endMs, parent)`: a finished span with times measured
 *   elsewhere (performance.now() of this thread), such as the encoder thread's run.
 * Times are this thread's `performance.now()` milliseconds throughout.
 */

export type AttributeValue = string | number | boolean | string[] | number[];
/** Undefined values are left off the span. */
export type Attributes = Readonly<Record<string, AttributeValue | undefined>>;

export interface Span {
  /** False on the no-op span: a caller may skip computing an attribute nobody records. */
  readonly recording: boolean;
  setAttribute(key: string, value: AttributeValue | undefined): void;
  setAttributes(attributes: Attributes): void;
  /** Marks the span failed: the error's code (an AppError's) and message, never its data. */
  fail(error: unknown): void;
  end(endMs?: number): void;
}

/**
 * Keys whose values are a user's: the user id and texts a user wrote or searched for. The
 * backend drops them unless MEMORYPOOL_TRACE_USER_IDS=true, so a span shows what was done and
 * how long it took, not whose memory it touched or what it said.
 */
export const USER_ID = 'user.id';
export const QUERY_TEXT = 'memorypool.query';
export const MEMORY_TEXT = 'memorypool.text';
export const SENSITIVE_KEYS: ReadonlySet<string> = new Set([USER_ID, QUERY_TEXT, MEMORY_TEXT]);

/** The stores' write spans, one name for both stores (the JSONL append and fsync, or the SQL transaction). */
export const STORE_APPEND = 'memorypool.store.append';
export const STORE_REWRITE = 'memorypool.store.rewrite';

/** The request id on every span of a request, as in its log lines (`reqId`). */
export const REQUEST_ID = 'memorypool.request_id';

/** A trace's place (W3C `traceparent` headers) and its request id, as data a message carries to another thread. */
export interface TraceCarrier {
  headers: Record<string, string>;
  requestId?: string;
}

/** What otel-backend.ts implements; nothing else does. */
export interface TracingBackend {
  startSpan(name: string, attributes: Attributes | undefined, options: SpanOptions): Span;
  /** The HTTP server span, a child of the caller's trace when the headers carry a `traceparent`. */
  startServerSpan(name: string, attributes: Attributes, headers: Readonly<Record<string, string | string[] | undefined>>): Span;
  /** Runs `fn` with `span` as the current span. */
  within<T>(span: Span, fn: () => T): T;
  /** Runs `fn` with `span` (when given) current and `requestId` as the request's. */
  inRequest<T>(requestId: string, span: Span | null, fn: () => T): T;
  /** The request id `inRequest` set for the work running now. */
  requestId(): string | undefined;
  /** The current span and request id as data another thread can continue (`continued`). */
  carrier(): TraceCarrier;
  /** Runs `fn` as a part of the trace and request a carrier names. */
  continued<T>(carrier: TraceCarrier, fn: () => T): T;
  shutdown(): Promise<void>;
}

export interface SpanOptions {
  /** The span's start (this thread's performance.now()); now when absent. */
  startMs?: number;
  /** The parent; the current span when absent. */
  parent?: Span;
}

/** What every call answers while tracing is off. */
export const NOOP_SPAN: Span = {
  recording: false,
  setAttribute() {},
  setAttributes() {},
  fail() {},
  end() {},
};

let backend: TracingBackend | null = null;

/** Whether spans are recorded (a backend is installed). */
export function tracingEnabled(): boolean {
  return backend !== null;
}

/** Installs the backend (tracing-start.ts), or with null removes it (after its shutdown). */
export function installTracingBackend(next: TracingBackend | null): void {
  backend = next;
}

export function withSpan<T>(name: string, attributes: Attributes | undefined, fn: (span: Span) => T): T {
  if (backend === null) return fn(NOOP_SPAN);
  const active = backend;
  const span = active.startSpan(name, attributes, {});
  let result: T;
  try {
    result = active.within(span, () => fn(span));
  } catch (error) {
    span.fail(error);
    span.end();
    throw error;
  }
  if (result instanceof Promise) {
    return result.then(
      (value: unknown) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        span.fail(error);
        span.end();
        throw error;
      },
    ) as T;
  }
  span.end();
  return result;
}

export function startSpan(name: string, attributes?: Attributes, options: SpanOptions = {}): Span {
  return backend === null ? NOOP_SPAN : backend.startSpan(name, attributes, options);
}

export function recordSpan(name: string, attributes: Attributes | undefined, startMs: number, endMs: number, parent?: Span): void {
  if (backend === null) return;
  backend.startSpan(name, attributes, { startMs, parent }).end(endMs);
}

/** The server span of an HTTP request (src/http/request-tracing.ts); the no-op span while off. */
export function startServerSpan(name: string, attributes: Attributes, headers: Readonly<Record<string, string | string[] | undefined>>): Span {
  return backend === null ? NOOP_SPAN : backend.startServerSpan(name, attributes, headers);
}

/**
 * Runs `fn` with `span` current and the request id as the one its log lines carry (logger.ts),
 * while tracing is on: the id travels in the trace's context, whose AsyncLocalStorage a process
 * that does not trace never enables (on Node 20 its promise hook would cost every request). There
 * fastify's request logger names the request in the HTTP layer's lines.
 */
export function inRequest<T>(requestId: string, span: Span | null, fn: () => T): T {
  return backend === null ? fn() : backend.inRequest(requestId, span, fn);
}

/** The id of the request whose work is running (while tracing is on), for the log lines written below the HTTP layer. */
export function currentRequestId(): string | undefined {
  return backend?.requestId();
}

/** The trace and request running now as data for another thread; null while tracing is off. */
export function traceCarrier(): TraceCarrier | null {
  return backend === null ? null : backend.carrier();
}

/** Runs `fn` within the trace a carrier from another thread names (at once while tracing is off here). */
export function continueTrace<T>(carrier: TraceCarrier | null | undefined, fn: () => T): T {
  return backend === null || !carrier ? fn() : backend.continued(carrier, fn);
}
