import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { register, sleep } from './helper.js';

/**
 * An OTLP/HTTP traces receiver on a loopback port, as a collector would run one: it takes every
 * POST to /v1/traces, answers 200 and keeps the bodies. Both encodings are decoded here,
 * independently of the SDK that encoded them: JSON bodies (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/json)
 * by the OTLP JSON mapping (hex ids, attributes as typed values), protobuf ones (the default) by
 * a wire-format reader of their own (`decodeOtlpProtobuf`).
 */

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** Empty for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server. */
  kind: number;
  startNs: bigint;
  endNs: bigint;
  attributes: Record<string, unknown>;
  statusCode: number;
  resource: Record<string, unknown>;
}

export interface Receiver {
  url: string;
  /** Every decoded span received so far. */
  spans(): ReceivedSpan[];
  /** Raw bodies with their content type (for the protobuf encoding). */
  bodies(): Array<{ contentType: string; body: Buffer }>;
  /** Waits (bounded) until a span passes the test. */
  waitFor(test: (span: ReceivedSpan) => boolean, timeoutMs?: number): Promise<ReceivedSpan>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: OtlpValue[] };
}

function valueOf(value: OtlpValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

function attributesOf(list: Array<{ key: string; value: OtlpValue }> | undefined): Record<string, unknown> {
  return Object.fromEntries((list ?? []).map(({ key, value }) => [key, valueOf(value)]));
}

interface OtlpJson {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: OtlpValue }> };
    scopeSpans?: Array<{
      spans?: Array<{
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        name: string;
        kind: number;
        startTimeUnixNano: string;
        endTimeUnixNano: string;
        attributes?: Array<{ key: string; value: OtlpValue }>;
        status?: { code?: number };
      }>;
    }>;
  }>;
}

export function decodeOtlpJson(body: OtlpJson): ReceivedSpan[] {
  return (body.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributesOf(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scope) =>
      (scope.spans ?? []).map((span) => ({
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId ?? '',
        name: span.name,
        kind: span.kind,
        startNs: BigInt(span.startTimeUnixNano),
        endNs: BigInt(span.endTimeUnixNano),
        attributes: attributesOf(span.attributes),
        statusCode: span.status?.code ?? 0,
        resource,
      })),
    );
  });
}

/**
 * The protobuf encoding (OTLP's default), read with a wire-format reader of its own: field
 * numbers and types from opentelemetry-proto's trace.proto and common.proto, ids as hex as
 * in the JSON mapping, int64 values as numbers. Fields memorypool never sets (events, links,
 * kvlist and bytes values) are skipped.
 */
class Wire {
  pos = 0;
  constructor(
    private readonly bytes: Buffer,
    private readonly end = bytes.length,
  ) {}

  more(): boolean {
    return this.pos < this.end;
  }

  varint(): bigint {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = this.bytes[this.pos++];
      if (byte === undefined || shift > 63n) throw new Error('truncated or overlong varint');
      value |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return value;
    }
  }

  /** The next field: its number, wire type and, for a length-delimited one, a reader over its bytes. */
  field(): { number: number; type: number; value: bigint | Wire | Buffer } {
    const key = Number(this.varint());
    const type = key & 7;
    if (type === 0) return { number: key >> 3, type, value: this.varint() };
    if (type === 1 || type === 5) {
      const size = type === 1 ? 8 : 4;
      const value = this.bytes.subarray(this.pos, this.pos + size);
      this.pos += size;
      return { number: key >> 3, type, value };
    }
    if (type !== 2) throw new Error(`wire type ${type} not expected`);
    const length = Number(this.varint());
    const inner = new Wire(this.bytes, this.pos + length);
    inner.pos = this.pos;
    this.pos += length;
    if (this.pos > this.end) throw new Error('length past the end');
    return { number: key >> 3, type, value: inner };
  }

  text(): string {
    return this.bytes.toString('utf8', this.pos, this.end);
  }

  hex(): string {
    return this.bytes.toString('hex', this.pos, this.end);
  }
}

function anyValue(wire: Wire): unknown {
  let value: unknown;
  while (wire.more()) {
    const field = wire.field();
    if (field.number === 1) value = (field.value as Wire).text();
    else if (field.number === 2) value = field.value === 1n;
    else if (field.number === 3) value = Number(BigInt.asIntN(64, field.value as bigint));
    else if (field.number === 4) value = (field.value as Buffer).readDoubleLE(0);
    else if (field.number === 5) {
      const items: unknown[] = [];
      const array = field.value as Wire;
      while (array.more()) items.push(anyValue(array.field().value as Wire));
      value = items;
    }
  }
  return value;
}

function keyValue(wire: Wire): [string, unknown] {
  let key = '';
  let value: unknown;
  while (wire.more()) {
    const field = wire.field();
    if (field.number === 1) key = (field.value as Wire).text();
    else if (field.number === 2) value = anyValue(field.value as Wire);
  }
  return [key, value];
}

function protobufSpan(wire: Wire, resource: Record<string, unknown>): ReceivedSpan {
  const span: ReceivedSpan = { traceId: '', spanId: '', parentSpanId: '', name: '', kind: 0, startNs: 0n, endNs: 0n, attributes: {}, statusCode: 0, resource };
  while (wire.more()) {
    const { number, value } = wire.field();
    if (number === 1) span.traceId = (value as Wire).hex();
    else if (number === 2) span.spanId = (value as Wire).hex();
    else if (number === 4) span.parentSpanId = (value as Wire).hex();
    else if (number === 5) span.name = (value as Wire).text();
    else if (number === 6) span.kind = Number(value);
    else if (number === 7) span.startNs = (value as Buffer).readBigUInt64LE(0);
    else if (number === 8) span.endNs = (value as Buffer).readBigUInt64LE(0);
    else if (number === 9) {
      const [key, attribute] = keyValue(value as Wire);
      span.attributes[key] = attribute;
    } else if (number === 15) {
      const status = value as Wire;
      while (status.more()) {
        const field = status.field();
        if (field.number === 3) span.statusCode = Number(field.value);
      }
    }
  }
  return span;
}

export function decodeOtlpProtobuf(body: Buffer): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  const request = new Wire(body);
  while (request.more()) {
    const resourceSpans = request.field();
    if (resourceSpans.number !== 1) continue;
    const wire = resourceSpans.value as Wire;
    const resource: Record<string, unknown> = {};
    const scopes: Wire[] = [];
    // The resource is the first field as encoders write it, but nothing requires it: read it before the spans.
    while (wire.more()) {
      const field = wire.field();
      if (field.number === 1) {
        const attributes = field.value as Wire;
        while (attributes.more()) {
          const attribute = attributes.field();
          if (attribute.number === 1) {
            const [key, value] = keyValue(attribute.value as Wire);
            resource[key] = value;
          }
        }
      } else if (field.number === 2) scopes.push(field.value as Wire);
    }
    for (const scope of scopes) {
      while (scope.more()) {
        const field = scope.field();
        if (field.number === 2) spans.push(protobufSpan(field.value as Wire, resource));
      }
    }
  }
  return spans;
}

export async function startReceiver(): Promise<Receiver> {
  const spans: ReceivedSpan[] = [];
  const bodies: Array<{ contentType: string; body: Buffer }> = [];
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = Buffer.concat(chunks);
      const contentType = request.headers['content-type'] ?? '';
      if (request.method !== 'POST' || request.url !== '/v1/traces') {
        response.writeHead(404).end();
        return;
      }
      bodies.push({ contentType, body });
      if (contentType.startsWith('application/json')) spans.push(...decodeOtlpJson(JSON.parse(body.toString('utf8')) as OtlpJson));
      else if (contentType.startsWith('application/x-protobuf')) spans.push(...decodeOtlpProtobuf(body));
      response.writeHead(200, { 'content-type': contentType.startsWith('application/json') ? 'application/json' : 'application/x-protobuf' }).end(contentType.startsWith('application/json') ? '{}' : '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  register(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    spans: () => [...spans],
    bodies: () => [...bodies],
    async waitFor(test, timeoutMs = 15_000) {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const found = spans.find(test);
        if (found) return found;
        if (performance.now() > deadline) throw new Error(`no such span within ${timeoutMs} ms; received: ${spans.map((span) => span.name).join(', ')}`);
        await sleep(25);
      }
    },
  };
}
