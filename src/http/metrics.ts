import type { FastifyInstance } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BatchObserver } from '../embedding/embedder.js';
import type { MemoryApi } from '../memory/memory-api.js';
import { clusterMetricsText, isClusterWorker, shareMetrics } from '../server-cluster.js';

/**
 * The Prometheus figures at GET /metrics. Labels are bounded: the route's pattern (never the
 * URL, which holds ids and queries), the method, the status; never a user or a request id.
 * Pool sizes are read from the service's stats at scrape time rather than counted on every write.
 */
/**
 * The process defaults (CPU, memory, event-loop lag, GC), collected once per process: each
 * collection starts its own event-loop monitor, and tests build hundreds of apps in one process.
 */
let processRegistry: Registry | null = null;

function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'status'>;
  private readonly latency: Histogram<'method' | 'route'>;

  constructor(service: MemoryApi) {
    const registers = [this.registry];
    this.requests = new Counter({ name: 'memorypool_http_requests_total', help: 'HTTP requests answered, by route pattern and status', labelNames: ['method', 'route', 'status'], registers });
    this.latency = new Histogram({
      name: 'memorypool_http_request_duration_seconds',
      help: 'Time from request to the end of the answer, by route pattern (POST /add and POST /search are the Add and Search latencies)',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    const batchSize = new Histogram({ name: 'memorypool_encoder_batch_size', help: 'Texts per encoder model call', buckets: [1, 2, 4, 8, 16, 32, 64, 128], registers });
    const queueWait = new Histogram({ name: 'memorypool_encoder_queue_wait_seconds', help: "Each text's wait in the encoder queue before its model call started", buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registers });
    const run = new Histogram({ name: 'memorypool_encoder_run_seconds', help: 'Duration of each encoder model call', buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5], registers });
    const encoderCalls: BatchObserver = {
      batch(size, waitsMs, runMs) {
        batchSize.observe(size);
        for (const wait of waitsMs) queueWait.observe(wait / 1000);
        run.observe(runMs / 1000);
      },
    };

    // From the store's pool-wide counts (one query on PostgreSQL, known or cached per user for
    // JSONL), not from /mem/stats' per-user figures: a scrape every few seconds must not read
    // every user's rows or files.
    // Every server process counts the same pool: summed over processes they would count it N times.
    new Gauge({ name: 'memorypool_memories', help: 'Memories held', registers, aggregator: 'first', collect: async function () { this.set(await service.memoryCount()); } });
    new Gauge({ name: 'memorypool_users', help: 'Users with memories', registers, aggregator: 'first', collect: async function () { this.set(await service.userCount()); } });
    new Gauge({
      name: 'memorypool_index_rebuilds_in_progress',
      help: "Users whose HNSW index is still being read or rebuilt (their searches score exhaustively meanwhile)",
      registers,
      // A user not held in memory has no index being read.
      collect: async function () { this.set(await service.indexesInProgress()); },
    });

    // The encoder's figures exist only where its calls are pooled (the ONNX and HTTP embedders,
    // behind the query-vector cache, which passes the observer on).
    service.embedder.observeBatches?.(encoderCalls);
    const { embedder } = service;
    if (embedder.copiesRunning?.() !== undefined) {
      new Gauge({
        name: 'memorypool_encoder_copies',
        help: 'Copies of the local encoder loaded (the first at the start, more when stored texts queue up or a query waits behind them, up to MEMORYPOOL_ENCODER_WORKERS)',
        registers,
        collect: function () { this.set(embedder.copiesRunning?.() ?? 0); },
      });
    }
    if (isClusterWorker()) shareMetrics([processMetrics(), this.registry]);
  }

  /**
   * The Prometheus text: the process defaults, then this app's figures. Under several server
   * processes, every process's figures summed (the primary asks each): a scrape reaches one of
   * them, and must not see a different share of the traffic each time.
   */
  async text(): Promise<string> {
    if (isClusterWorker()) return clusterMetricsText();
    return (await processMetrics().metrics()) + '\n' + (await this.registry.metrics());
  }

  observeRequest(method: string, route: string, status: number, seconds: number): void {
    this.requests.inc({ method, route, status: String(status) });
    this.latency.observe({ method, route }, seconds);
  }
}

/**
 * Times every request from its arrival to the end of its answer, errors and refusals included
 * (registered before the auth hook, so 401s count too), and serves the figures.
 */
export function registerMetrics(app: FastifyInstance, metrics: ServiceMetrics): void {
  // The callback form: no promise per request (app.ts says why that matters).
  app.addHook('onRequest', (request, reply, done) => {
    const start = process.hrtime.bigint();
    // The raw response's finish also covers answers written around fastify (the MCP transport's).
    reply.raw.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - start) / 1e9;
      metrics.observeRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.raw.statusCode, seconds);
    });
    done();
  });
  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.text();
  });
}
