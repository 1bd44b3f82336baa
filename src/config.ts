import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';

/*
 * The only reader of environment variables. Command-line flags (already parsed by the CLI)
 * override the environment, which overrides the defaults below. `.env.example` documents each.
 */

/**
 * The default build of the local model: int8, ~3x less encoder CPU than the float one. Issue 12's
 * rule allows it while int8 loses at most 0.5 points of dev recall@10 on either set: with sessions
 * stored in conversation order (arrival-order.ts) LoCoMo 80.9 against fp32's 80.8, LongMemEval-S
 * 94.7 against 94.7 (eval/README.md). fp32 stays one setting away.
 */
export const DEFAULT_MODEL_PRECISION = 'int8';
/**
 * One onnxruntime thread: a second one spins while it waits, and on a small machine those cycles
 * are the ones HTTP and scoring need (CPU per request: bench/README.md).
 */
export const DEFAULT_ENCODER_THREADS = 1;
/**
 * The most copies of the local encoder, each a single-threaded session on a thread of its own: one
 * per core, so a server under ingest load encodes on every core (issue 20; the copies past the first
 * start only then: batching-embedder.ts, WAITING_RUNS_PER_COPY). Capped at 8: past that, more
 * copies add memory (~31 MiB of RSS each with the int8 model) faster than a memory service needs encoders.
 * With several server processes the cores are shared out among them: one copy per core in all.
 */
export function defaultEncoderWorkers(processes = 1): number {
  return Math.max(1, Math.min(8, Math.floor(os.availableParallelism() / processes)));
}

/**
 * A brought reranker re-scores a Search's best 50 hits and has half the say in their order: 50
 * covers the R@50 a reader of the top 10 can gain from; the weight is not measured (no
 * cross-encoder can be downloaded here: docs/configuration.md, "A reranker you bring").
 */
export const DEFAULT_RERANK_TOP = 50;
export const DEFAULT_RERANK_WEIGHT = 0.5;

const configSchema = z.object({
  host: z.string().min(1).default('127.0.0.1'),
  port: z.coerce.number().int().min(0).max(65535).default(8751),
  dataDir: z.string().min(1).default(path.join(os.homedir(), '.memorypool')),
  /** A single bearer token for every route but /health; unset runs the service open. */
  token: z.string().min(1).optional(),
  /** A JSON file of tokens scoped to user-id prefixes: [{"token": "...", "user_prefixes": ["team-a/"]}]. */
  tokensFile: z.string().min(1).optional(),
  embedder: z.enum(['onnx', 'hash', 'http']).default('onnx'),
  /**
   * Folder of the local encoder (default: the package's own models/use-lite): the built USE-lite,
   * or a sentence-transformers model exported to ONNX (config.json, tokenizer.json, onnx/model.onnx).
   */
  modelDir: z.string().min(1).optional(),
  /** Pooling of a brought model, overriding its 1_Pooling/config.json. */
  pooling: z.enum(['mean', 'cls', 'max', 'lasttoken']).optional(),
  /** Text put before each search query for a brought model that wants one (e5: "query: "). */
  queryPrefix: z.string().optional(),
  /** Text put before each stored text for a brought model that wants one (e5: "passage: "); changing it re-embeds. */
  documentPrefix: z.string().optional(),
  /** Share of the dense score in the fusion; default follows the encoder (retrieval-config.ts). */
  denseWeight: z.coerce.number().min(0).max(1).optional(),
  /** Users with at most this many memories are scored exhaustively and keep no HNSW graph; larger ones take graph candidates. Default 20000 (retrieval-config.ts). */
  exhaustiveLimit: z.coerce.number().int().min(0).optional(),
  /** A cross-encoder exported to ONNX (config.json, tokenizer.json, onnx/model.onnx): each Search's best hits are re-scored by it. Unset: no reranker. */
  rerankerDir: z.string().min(1).optional(),
  /** How many of the fused ranking's best hits the reranker re-scores. */
  rerankTop: z.coerce.number().int().min(1).max(1000).default(DEFAULT_RERANK_TOP),
  /** The reranker's share of the final score: (1 − w) · fused (min-max over those hits) + w · sigmoid(logit). */
  rerankWeight: z.coerce.number().min(0).max(1).default(DEFAULT_RERANK_WEIGHT),
  /** Which build of the local model the onnx embedder runs: int8 (dynamic quantization) or the float original. */
  modelPrecision: z.enum(['fp32', 'int8']).default(DEFAULT_MODEL_PRECISION),
  /** onnxruntime intra-op threads of the local encoder. */
  encoderThreads: z.coerce.number().int().min(1).max(64).default(DEFAULT_ENCODER_THREADS),
  /** Copies of the local encoder, each on its own thread, in each server process (default: the cores shared out among the processes, at most 8). */
  encoderWorkers: z.coerce.number().int().min(1).max(64).optional(),
  /**
   * Server processes sharing the port, each with the whole API on the same data directory or
   * database (src/server-cluster.ts). 1 (the default) serves from one process; more put HTTP and
   * scoring on more than one core, each process holding its own cache of the users it serves.
   * `auto`: one per core.
   */
  processes: z
    .union([z.literal('auto'), z.coerce.number().int().min(1).max(64)])
    .default(1)
    .transform((value) => (value === 'auto' ? os.availableParallelism() : value)),
  /**
   * Service threads of a server process (src/threads/): each holds the users it owns and scores
   * their searches, the main thread keeping HTTP and the encoder's queue. 0 (the default) runs
   * the service on the main thread: on the 2-core machine measured, two threads answered 11-26%
   * more concurrent Searches, but a lone Search waited longer (p50 x1.07-1.35) and RSS grew
   * ~28% (bench/README.md, "Service threads").
   */
  threads: z.coerce.number().int().min(0).max(64).default(0),
  embedderUrl: z.string().url().optional(),
  embedderModel: z.string().min(1).optional(),
  embedderDimensions: z.coerce.number().int().positive().optional(),
  embedderApiKey: z.string().min(1).optional(),
  /** Largest top_k a search returns; larger requests are clamped, not rejected. */
  topKMax: z.coerce.number().int().positive().default(100),
  /** Largest request body in bytes (413 above it). */
  bodyLimit: z.coerce.number().int().positive().default(8 * 1024 * 1024),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Purge memories ingested more than this many days ago (off when unset). */
  retentionDays: z.coerce.number().positive().optional(),
  /** Days the change feed keeps its events (GET /mem/changes); an older cursor answers 410. */
  changesDays: z.coerce.number().positive().default(7),
  /** A JSON file of webhooks, [{"url", "secret", "events"?, "users"?}] (src/webhooks/webhooks-file.ts): each change event POSTed, signed. */
  webhooksFile: z.string().min(1).optional(),
  /** The first retry's delay of a failed webhook delivery (ms), doubled per failure; short in tests. */
  webhooksRetryMs: z.coerce.number().int().positive().default(1_000),
  /** A postgres:// URL: memories live in PostgreSQL (shared by replicas) instead of the data directory. */
  databaseUrl: z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL').optional(),
  /** Memory budget (MiB) for the users held in memory; least recently used users are evicted past it. Unset: no limit. */
  cacheMb: z.coerce.number().positive().optional(),

  // The edge: HTTPS, slow clients, overload, rate limits (docs/http-api.md, "Limits ..."; src/http/http-server.ts, load-shedding.ts, rate-limit.ts).
  /** PEM certificate (chain) and private key files: both set serve HTTPS. */
  tlsCert: z.string().min(1).optional(),
  tlsKey: z.string().min(1).optional(),
  /** Request line and headers must arrive within this (ms): a slow-loris client is cut off, 408. */
  headersTimeoutMs: z.coerce.number().int().positive().default(10_000),
  /** The whole request, body included, must arrive within this (ms). */
  requestTimeoutMs: z.coerce.number().int().positive().default(60_000),
  /** An idle keep-alive connection is closed after this (ms). */
  keepAliveTimeoutMs: z.coerce.number().int().positive().default(72_000),
  /** Shed requests (503, retry-after) while the event loop's mean delay exceeds this (ms); 0 never sheds. */
  maxEventLoopDelayMs: z.coerce.number().int().min(0).default(10_000),
  /** Requests per token per window before 429s; 0 (the default) never limits. */
  rateLimit: z.coerce.number().int().min(0).default(0),
  rateLimitWindowMs: z.coerce.number().int().positive().default(60_000),
  /** Origins whose browser pages may call the API (CORS, src/http/cors.ts): comma-separated, or `*`; none by default. */
  corsOrigins: z
    .string()
    .default('')
    .transform((value) => value.split(',').map((origin) => origin.trim()).filter(Boolean))
    .pipe(z.array(z.union([z.literal('*'), z.string().regex(/^https?:\/\/[^/\s]+\/?$/, 'each origin is scheme://host[:port], or *')]))),
  /** Serve GET /metrics without a token (for a scraper inside a trusted network). */
  metricsPublic: z.stringbool().default(false),
  /** Put user ids and texts (queries, memories) on trace spans; off, spans carry neither (src/telemetry/tracing.ts). */
  traceUserIds: z.stringbool().default(false),
});

export type Config = z.infer<typeof configSchema> & { encoderWorkers: number; tracing: TracingConfig | null };
export type ConfigInput = z.input<typeof configSchema>;

/**
 * OpenTelemetry traces, on when the standard OTLP endpoint variable is set (src/telemetry/). The
 * SDK reads the rest of the standard variables itself (endpoint, headers, timeout,
 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES, OTEL_TRACES_SAMPLER(_ARG), OTEL_BSP_*): the one
 * exception to this file being the only reader of the environment, so that they mean what they
 * mean everywhere else in an operator's stack.
 */
export interface TracingConfig {
  /** How spans are encoded on the wire: protobuf (the OTLP default) or JSON. */
  protocol: 'http/protobuf' | 'http/json';
  /** MEMORYPOOL_TRACE_USER_IDS. */
  traceUserIds: boolean;
}

const ENV_NAMES: Record<keyof z.infer<typeof configSchema>, string> = {
  host: 'MEMORYPOOL_HOST',
  port: 'MEMORYPOOL_PORT',
  dataDir: 'MEMORYPOOL_DATA_DIR',
  token: 'MEMORYPOOL_TOKEN',
  tokensFile: 'MEMORYPOOL_TOKENS_FILE',
  embedder: 'MEMORYPOOL_EMBEDDER',
  modelDir: 'MEMORYPOOL_MODEL_DIR',
  modelPrecision: 'MEMORYPOOL_MODEL_PRECISION',
  pooling: 'MEMORYPOOL_POOLING',
  queryPrefix: 'MEMORYPOOL_QUERY_PREFIX',
  documentPrefix: 'MEMORYPOOL_DOCUMENT_PREFIX',
  denseWeight: 'MEMORYPOOL_DENSE_WEIGHT',
  exhaustiveLimit: 'MEMORYPOOL_EXHAUSTIVE_LIMIT',
  rerankerDir: 'MEMORYPOOL_RERANKER_DIR',
  rerankTop: 'MEMORYPOOL_RERANK_TOP',
  rerankWeight: 'MEMORYPOOL_RERANK_WEIGHT',
  encoderThreads: 'MEMORYPOOL_ENCODER_THREADS',
  encoderWorkers: 'MEMORYPOOL_ENCODER_WORKERS',
  processes: 'MEMORYPOOL_PROCESSES',
  threads: 'MEMORYPOOL_THREADS',
  embedderUrl: 'MEMORYPOOL_EMBEDDER_URL',
  embedderModel: 'MEMORYPOOL_EMBEDDER_MODEL',
  embedderDimensions: 'MEMORYPOOL_EMBEDDER_DIMENSIONS',
  embedderApiKey: 'MEMORYPOOL_EMBEDDER_API_KEY',
  topKMax: 'MEMORYPOOL_TOP_K_MAX',
  bodyLimit: 'MEMORYPOOL_BODY_LIMIT',
  logLevel: 'MEMORYPOOL_LOG_LEVEL',
  retentionDays: 'MEMORYPOOL_RETENTION_DAYS',
  changesDays: 'MEMORYPOOL_CHANGES_DAYS',
  webhooksFile: 'MEMORYPOOL_WEBHOOKS_FILE',
  webhooksRetryMs: 'MEMORYPOOL_WEBHOOKS_RETRY_MS',
  databaseUrl: 'MEMORYPOOL_DATABASE_URL',
  cacheMb: 'MEMORYPOOL_CACHE_MB',
  tlsCert: 'MEMORYPOOL_TLS_CERT',
  tlsKey: 'MEMORYPOOL_TLS_KEY',
  headersTimeoutMs: 'MEMORYPOOL_HEADERS_TIMEOUT_MS',
  requestTimeoutMs: 'MEMORYPOOL_REQUEST_TIMEOUT_MS',
  keepAliveTimeoutMs: 'MEMORYPOOL_KEEP_ALIVE_TIMEOUT_MS',
  maxEventLoopDelayMs: 'MEMORYPOOL_MAX_EVENT_LOOP_DELAY_MS',
  rateLimit: 'MEMORYPOOL_RATE_LIMIT',
  rateLimitWindowMs: 'MEMORYPOOL_RATE_LIMIT_WINDOW_MS',
  metricsPublic: 'MEMORYPOOL_METRICS_PUBLIC',
  corsOrigins: 'MEMORYPOOL_CORS_ORIGINS',
  traceUserIds: 'MEMORYPOOL_TRACE_USER_IDS',
};

export function loadConfig(flags: Partial<ConfigInput> = {}, env: NodeJS.ProcessEnv = process.env): Config {
  const input: Record<string, unknown> = {};
  for (const [key, name] of Object.entries(ENV_NAMES)) {
    const value = env[name];
    if (value !== undefined && value !== '') input[key] = value;
  }
  for (const [key, value] of Object.entries(flags)) if (value !== undefined) input[key] = value;
  const parsed = configSchema.safeParse(input);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${ENV_NAMES[issue.path[0] as keyof typeof ENV_NAMES] ?? issue.path.join('.')}: ${issue.message}`);
    throw new Error(`Invalid configuration: ${problems.join('; ')}`);
  }
  return {
    ...parsed.data,
    encoderWorkers: parsed.data.encoderWorkers ?? defaultEncoderWorkers(parsed.data.processes),
    tracing: tracingConfig(env, parsed.data.traceUserIds),
  };
}

/**
 * Tracing is on with an OTLP endpoint (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or
 * OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended by the SDK), unless the SDK is disabled
 * (OTEL_SDK_DISABLED=true) or the traces exporter is `none`. Only OTLP over HTTP is built in.
 */
export function tracingConfig(env: NodeJS.ProcessEnv, traceUserIds: boolean): TracingConfig | null {
  const set = (name: string): string | undefined => (env[name] === undefined || env[name].trim() === '' ? undefined : env[name].trim());
  if (set('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT') === undefined && set('OTEL_EXPORTER_OTLP_ENDPOINT') === undefined) return null;
  if (set('OTEL_SDK_DISABLED')?.toLowerCase() === 'true' || set('OTEL_TRACES_EXPORTER') === 'none') return null;
  const exporter = set('OTEL_TRACES_EXPORTER');
  if (exporter !== undefined && exporter !== 'otlp') throw new Error(`Invalid configuration: OTEL_TRACES_EXPORTER: memorypool exports traces over OTLP only ("otlp" or "none", not ${JSON.stringify(exporter)})`);
  const protocol = set('OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ?? set('OTEL_EXPORTER_OTLP_PROTOCOL') ?? 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new Error(`Invalid configuration: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: memorypool exports over OTLP/HTTP ("http/protobuf" or "http/json", not ${JSON.stringify(protocol)})`);
  }
  return { protocol, traceUserIds };
}

/**
 * Where the service keeps memories and how many of them it holds, as `MemoryService.open` takes
 * it: the server and every command open the pool the same way (the data directory, or PostgreSQL
 * with a database URL; `MEMORYPOOL_CACHE_MB` in bytes, undefined keeping every loaded user).
 */
export function storeOptions(config: Pick<Config, 'dataDir' | 'databaseUrl' | 'cacheMb'>): { dataDir: string; databaseUrl?: string; cacheBytes?: number } {
  return { dataDir: config.dataDir, databaseUrl: config.databaseUrl, cacheBytes: config.cacheMb === undefined ? undefined : config.cacheMb * 1024 * 1024 };
}

/** Whether the server speaks HTTPS: given a certificate and a key (one without the other is refused). */
export function isTls(options: { tlsCert?: string; tlsKey?: string }): boolean {
  if ((options.tlsCert === undefined) !== (options.tlsKey === undefined)) {
    throw new Error('HTTPS needs both a certificate and a key (MEMORYPOOL_TLS_CERT and MEMORYPOOL_TLS_KEY, or --tls-cert and --tls-key)');
  }
  return options.tlsCert !== undefined;
}
