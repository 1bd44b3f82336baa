import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { register, sleep } from './helper.js';

/**
 * An OTLP/HTTP traces receiver on a loopback port, as a collector would run one: it takes every
 * POST to /v1/traces, answers 200 and keeps the bodies. JSON bodies (OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
 * =http/json) are decoded here, by the OTLP JSON mapping (hex ids, attributes as typed values),
 * independently of the SDK that encoded them.
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
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const found = spans.find(test);
        if (found) return found;
        if (Date.now() > deadline) throw new Error(`no such span within ${timeoutMs} ms; received: ${spans.map((span) => span.name).join(', ')}`);
        await sleep(25);
      }
    },
  };
}
