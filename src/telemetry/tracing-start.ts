import { installTracingBackend, tracingEnabled, type TracingBackend } from './tracing.js';

export interface TracingOptions {
  /** The OTLP/HTTP encoding (config.ts, TracingConfig). */
  protocol: 'http/protobuf' | 'http/json';
  traceUserIds: boolean;
  serviceVersion: string;
}

export interface RunningTracing {
  /** Exports the spans still buffered, then stops recording. */
  shutdown(): Promise<void>;
}

let running: { backend: TracingBackend; users: number } | null = null;

/**
 * Loads the OpenTelemetry SDK (only now: a process without an endpoint never imports it) and
 * installs it behind tracing.ts. The process has one tracer: a second start in it (the server
 * and an in-process pool) shares the first, and the last shutdown flushes and removes it.
 */
export async function startTracing(options: TracingOptions): Promise<RunningTracing> {
  if (running === null || !tracingEnabled()) {
    const [{ createOtelBackend }, exporter] = await Promise.all([import('./otel-backend.js'), createExporter(options.protocol)]);
    running = { backend: createOtelBackend({ exporter, traceUserIds: options.traceUserIds, serviceVersion: options.serviceVersion }), users: 0 };
    installTracingBackend(running.backend);
  }
  const current = running;
  current.users++;
  let stopped = false;
  return {
    async shutdown(): Promise<void> {
      if (stopped) return;
      stopped = true;
      if (--current.users > 0) return;
      if (running === current) {
        running = null;
        installTracingBackend(null);
      }
      await current.backend.shutdown();
    },
  };
}

/** The exporter for the encoding; it reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, _HEADERS, _TIMEOUT itself. */
async function createExporter(protocol: TracingOptions['protocol']) {
  if (protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter();
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter();
}
