import { randomFillSync } from 'node:crypto';
import { SpanKind, SpanStatusCode, type Attributes as OtelAttributes, type AttributeValue as OtelAttributeValue, type Exception, type HrTime, type Link, type Span as OtelSpan, type SpanContext, type SpanStatus, type TimeInput } from '@opentelemetry/api';
import { hrTimeDuration, hrTimeToMilliseconds, isTimeInputHrTime, millisToHrTime, type InstrumentationScope } from '@opentelemetry/core';
import type { Resource } from '@opentelemetry/resources';
import type { ReadableSpan, SpanProcessor, TimedEvent } from '@opentelemetry/sdk-trace-base';
import { SENSITIVE_KEYS, type AttributeValue, type Span } from './tracing.js';

/**
 * A sampled span, recorded as the SDK's `ReadableSpan` for its span processor and exporter
 * without going through its Tracer. In a CPU profile of a server's cached Searches the Tracer's
 * `startSpan` and its span took ~15 µs a span (each id converted to hex on its own, the span's
 * own metrics, the attributes copied and sanitized twice, clock readings anchored per span), a
 * third of the main thread's CPU that tracing added; this record takes about half that, and a
 * traced server's CPU per cached Search went to 0.965x on Node 24 (bench/HISTORY.md). What the
 * SDK's spans do that matters is kept: the sampler is the SDK's, built from the standard
 * variables (otel-backend.ts), and decides every root and every span continuing another
 * thread's or process's trace; the attribute limits are the SDK's; times are anchored to the
 * wall clock at the trace's first span in this thread (as the SDK anchors each span) and
 * measured by performance.now() from there, so a child never sticks out of its parent; and the
 * span is also the API's `Span`, so that a context holding it serves any instrumentation in the
 * process.
 */

export interface SpanRecorder {
  readonly processor: SpanProcessor;
  readonly resource: Resource;
  readonly scope: InstrumentationScope;
  readonly traceUserIds: boolean;
  /** OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT (or OTEL_ATTRIBUTE_COUNT_LIMIT), as the SDK reads it. */
  readonly attributeCountLimit: number;
  /** OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT (or OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT): longer strings are cut. */
  readonly attributeValueLengthLimit: number;
}

const NO_LINKS: Link[] = [];
/** A number of milliseconds this large is a time since 1970 (2001 on), never a performance.now() (31 years of uptime). */
const EPOCH_MS_FROM = 1e12;
const NO_EVENTS: TimedEvent[] = [];

export class RecordedSpan implements Span, ReadableSpan, OtelSpan {
  readonly recording = true;
  readonly attributes: OtelAttributes = {};
  droppedAttributesCount = 0;
  links: Link[] = NO_LINKS;
  events: TimedEvent[] = NO_EVENTS;
  readonly droppedEventsCount = 0;
  readonly droppedLinksCount = 0;
  status: SpanStatus = { code: SpanStatusCode.UNSET };
  ended = false;
  private readonly context: SpanContext;
  private endMs = 0;
  private attributeCount = 0;

  /**
   * @param anchorMs epoch ms at performance.now() 0, fixed for the trace in this thread (a child shares its parent's)
   * @param startMs this thread's performance.now() at the start
   */
  constructor(
    private readonly recorder: SpanRecorder,
    public name: string,
    readonly kind: SpanKind,
    traceId: string,
    readonly parentSpanContext: SpanContext | undefined,
    traceState: SpanContext['traceState'],
    readonly anchorMs: number,
    private readonly startMs: number,
  ) {
    this.context = { traceId, spanId: nextSpanId(), traceFlags: 1, traceState };
  }

  get startTime(): HrTime {
    return millisToHrTime(this.anchorMs + this.startMs);
  }

  get endTime(): HrTime {
    return millisToHrTime(this.anchorMs + this.endMs);
  }

  get duration(): HrTime {
    return hrTimeDuration(this.startTime, this.endTime);
  }

  get resource(): Resource {
    return this.recorder.resource;
  }

  get instrumentationScope(): InstrumentationScope {
    return this.recorder.scope;
  }

  spanContext(): SpanContext {
    return this.context;
  }

  isRecording(): boolean {
    return !this.ended;
  }

  setAttribute(key: string, value: AttributeValue | OtelAttributeValue | undefined): this {
    if (value === undefined || value === null || this.ended) return this;
    if (!this.recorder.traceUserIds && SENSITIVE_KEYS.has(key)) return this;
    const attributes = this.attributes as Record<string, OtelAttributeValue>;
    if (attributes[key] === undefined) {
      if (this.attributeCount >= this.recorder.attributeCountLimit) {
        this.droppedAttributesCount++;
        return this;
      }
      this.attributeCount++;
    }
    attributes[key] = this.cut(value);
    return this;
  }

  setAttributes(attributes: Readonly<Record<string, AttributeValue | OtelAttributeValue | undefined>>): this {
    for (const key in attributes) this.setAttribute(key, attributes[key]);
    return this;
  }

  fail(error: unknown): void {
    const code = (error as { code?: unknown } | null)?.code;
    // The error's type and code only: a message may quote a user's input.
    this.setAttribute('error.type', typeof code === 'string' ? code : ((error as Error | null)?.name ?? 'Error'));
    this.setStatus({ code: SpanStatusCode.ERROR, message: typeof code === 'string' ? code : undefined });
  }

  setStatus(status: SpanStatus): this {
    if (!this.ended && status.code !== SpanStatusCode.UNSET && this.status.code !== SpanStatusCode.OK) this.status = { ...status };
    return this;
  }

  updateName(name: string): this {
    if (!this.ended) this.name = name;
    return this;
  }

  addEvent(name: string, attributesOrTime?: OtelAttributes | TimeInput, time?: TimeInput): this {
    if (this.ended) return this;
    const timed = isTime(attributesOrTime);
    if (this.events === NO_EVENTS) this.events = [];
    this.events.push({ name, attributes: timed ? {} : { ...(attributesOrTime as OtelAttributes | undefined) }, time: millisToHrTime(this.anchorMs + this.perfMs(timed ? attributesOrTime : time)), droppedAttributesCount: 0 });
    return this;
  }

  addLink(link: Link): this {
    if (this.ended) return this;
    if (this.links === NO_LINKS) this.links = [];
    this.links.push(link);
    return this;
  }

  addLinks(links: Link[]): this {
    for (const link of links) this.addLink(link);
    return this;
  }

  /** The exception's type only (`exception.type`), as `fail` records an error: a message may quote a user's input. */
  recordException(exception: Exception, time?: TimeInput): void {
    const type = typeof exception === 'string' ? 'Error' : (exception.name ?? (exception.code === undefined ? 'Error' : String(exception.code)));
    this.addEvent('exception', { 'exception.type': type }, time);
  }

  /** `endTime` as performance.now() milliseconds (as every caller in memorypool gives it), or any of the API's times. */
  end(endTime?: TimeInput): void {
    if (this.ended) return;
    this.endMs = Math.max(this.startMs, this.perfMs(endTime));
    this.ended = true;
    this.recorder.processor.onEnd(this);
  }

  private perfMs(time: TimeInput | undefined): number {
    if (time === undefined) return performance.now();
    // memorypool's callers give performance.now() times, some a little ahead of this thread's
    // clock (another thread's, translated); the API's callers may give epoch ones, which are 1e12 and up.
    if (typeof time === 'number') return time < EPOCH_MS_FROM ? time : time - this.anchorMs;
    const epochMs = time instanceof Date ? time.getTime() : hrTimeToMilliseconds(time);
    return epochMs - this.anchorMs;
  }

  private cut(value: AttributeValue | OtelAttributeValue): OtelAttributeValue {
    const limit = this.recorder.attributeValueLengthLimit;
    if (limit === Infinity) return value;
    if (typeof value === 'string') return value.length > limit ? value.slice(0, limit) : value;
    if (Array.isArray(value)) return value.map((item: unknown) => (typeof item === 'string' && item.length > limit ? item.slice(0, limit) : item)) as OtelAttributeValue;
    return value;
  }
}

function isTime(value: unknown): value is TimeInput {
  return typeof value === 'number' || value instanceof Date || isTimeInputHrTime(value);
}

/** The epoch milliseconds at this thread's performance.now() 0, read now: a new trace's anchor. */
export function wallClockAnchor(): number {
  return Date.now() - performance.now();
}

/*
 * Ids from the system's CSPRNG, a block at a time: one hex conversion of 4 KiB serves 512 span
 * ids, where the SDK's generator converts each id on its own (a sixth of what its spans cost in that profile).
 */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let hex = '';
let at = 0;
const ZERO_SPAN_ID = '0'.repeat(16);
const ZERO_TRACE_ID = '0'.repeat(32);

function nextHex(chars: number): string {
  if (at + chars > hex.length) {
    randomFillSync(pool);
    hex = pool.toString('hex');
    at = 0;
  }
  const id = hex.slice(at, at + chars);
  at += chars;
  return id;
}

/** A span id: 16 hex digits, never all zeros (an invalid id in W3C Trace Context). */
export function nextSpanId(): string {
  for (;;) {
    const id = nextHex(16);
    if (id !== ZERO_SPAN_ID) return id;
  }
}

/** A trace id: 32 hex digits, never all zeros. */
export function nextTraceId(): string {
  for (;;) {
    const id = nextHex(32);
    if (id !== ZERO_TRACE_ID) return id;
  }
}
