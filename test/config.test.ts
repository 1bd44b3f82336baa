import { describe, expect, it } from 'vitest';
import os from 'node:os';
import { loadConfig } from '../src/config.js';

describe('loadConfig: an encoder the user brings', () => {
  it('reads the model folder, pooling, prefixes and dense weight from the environment, flags first', () => {
    const config = loadConfig(
      { queryPrefix: 'query: ' },
      { MEMORYPOOL_MODEL_DIR: '/models/e5', MEMORYPOOL_POOLING: 'cls', MEMORYPOOL_QUERY_PREFIX: 'q: ', MEMORYPOOL_DOCUMENT_PREFIX: 'passage: ', MEMORYPOOL_DENSE_WEIGHT: '0.8' },
    );
    expect(config).toMatchObject({ modelDir: '/models/e5', pooling: 'cls', queryPrefix: 'query: ', documentPrefix: 'passage: ', denseWeight: 0.8 });
  });

  it('leaves the dense weight to the encoder unless set, and refuses one outside 0-1 or an unknown pooling', () => {
    expect(loadConfig({}, {}).denseWeight).toBeUndefined();
    expect(() => loadConfig({}, { MEMORYPOOL_DENSE_WEIGHT: '1.5' })).toThrow(/MEMORYPOOL_DENSE_WEIGHT/);
    expect(() => loadConfig({}, { MEMORYPOOL_POOLING: 'median' })).toThrow(/MEMORYPOOL_POOLING/);
  });
});

describe('loadConfig: a reranker the user brings', () => {
  it('is off unless MEMORYPOOL_RERANKER_DIR (or --reranker-dir) names one; N 50 and weight 0.5 by default', () => {
    expect(loadConfig({}, {}).rerankerDir).toBeUndefined();
    expect(loadConfig({}, {})).toMatchObject({ rerankTop: 50, rerankWeight: 0.5 });
    expect(loadConfig({ rerankerDir: '/models/flag' }, { MEMORYPOOL_RERANKER_DIR: '/models/env', MEMORYPOOL_RERANK_TOP: '20', MEMORYPOOL_RERANK_WEIGHT: '0.8' })).toMatchObject({
      rerankerDir: '/models/flag',
      rerankTop: 20,
      rerankWeight: 0.8,
    });
    expect(() => loadConfig({}, { MEMORYPOOL_RERANK_WEIGHT: '2' })).toThrow(/MEMORYPOOL_RERANK_WEIGHT/);
    expect(() => loadConfig({}, { MEMORYPOOL_RERANK_TOP: '0' })).toThrow(/MEMORYPOOL_RERANK_TOP/);
  });
});

describe('loadConfig: server processes and encoder copies', () => {
  it('runs one process by default, and shares the cores out among the processes for the encoder copies', () => {
    const cores = os.availableParallelism();
    expect(loadConfig({}, {})).toMatchObject({ processes: 1, encoderWorkers: Math.max(1, Math.min(8, cores)) });
    expect(loadConfig({}, { MEMORYPOOL_PROCESSES: String(cores) }).encoderWorkers).toBe(1);
    // More processes than cores still give each one copy.
    expect(loadConfig({ processes: String(cores * 3) }, {}).encoderWorkers).toBe(1);
    // An explicit count wins.
    expect(loadConfig({}, { MEMORYPOOL_PROCESSES: '2', MEMORYPOOL_ENCODER_WORKERS: '3' })).toMatchObject({ processes: 2, encoderWorkers: 3 });
    expect(() => loadConfig({}, { MEMORYPOOL_PROCESSES: '0' })).toThrow(/MEMORYPOOL_PROCESSES/);
    expect(loadConfig({}, { MEMORYPOOL_PROCESSES: 'auto' })).toMatchObject({ processes: cores, encoderWorkers: 1 });
  });
});

describe('loadConfig: CORS origins', () => {
  it('lets no origin in by default, reads a comma-separated list or *, and refuses what is not an origin', () => {
    expect(loadConfig({}, {}).corsOrigins).toEqual([]);
    expect(loadConfig({}, { MEMORYPOOL_CORS_ORIGINS: 'http://localhost:5173, https://app.example.com:8443' }).corsOrigins).toEqual(['http://localhost:5173', 'https://app.example.com:8443']);
    expect(loadConfig({}, { MEMORYPOOL_CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
    expect(() => loadConfig({}, { MEMORYPOOL_CORS_ORIGINS: 'app.example.com' })).toThrow(/MEMORYPOOL_CORS_ORIGINS/);
    expect(() => loadConfig({}, { MEMORYPOOL_CORS_ORIGINS: 'https://app.example.com/path' })).toThrow(/MEMORYPOOL_CORS_ORIGINS/);
  });
});

describe('loadConfig: tracing', () => {
  const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4318' };

  it('is off without an OTLP endpoint, on with either variable, protobuf unless JSON is asked for', () => {
    expect(loadConfig({}, {}).tracing).toBeNull();
    expect(loadConfig({}, { OTEL_EXPORTER_OTLP_ENDPOINT: ' ' }).tracing).toBeNull();
    expect(loadConfig({}, endpoint).tracing).toEqual({ protocol: 'http/protobuf', traceUserIds: false });
    expect(loadConfig({}, { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', MEMORYPOOL_TRACE_USER_IDS: 'true' }).tracing).toEqual({
      protocol: 'http/json',
      traceUserIds: true,
    });
    // The traces variable wins over the general one, as the OpenTelemetry spec says.
    expect(loadConfig({}, { ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf' }).tracing?.protocol).toBe('http/protobuf');
  });

  it('stays off when the SDK is disabled or the exporter is none, and refuses what is not OTLP over HTTP', () => {
    expect(loadConfig({}, { ...endpoint, OTEL_SDK_DISABLED: 'true' }).tracing).toBeNull();
    expect(loadConfig({}, { ...endpoint, OTEL_TRACES_EXPORTER: 'none' }).tracing).toBeNull();
    expect(() => loadConfig({}, { ...endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(/OTEL_EXPORTER_OTLP_TRACES_PROTOCOL.*grpc/);
    expect(() => loadConfig({}, { ...endpoint, OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER/);
    expect(() => loadConfig({}, { ...endpoint, MEMORYPOOL_TRACE_USER_IDS: 'maybe' })).toThrow(/MEMORYPOOL_TRACE_USER_IDS/);
  });
});

describe('loadConfig: webhooks', () => {
  it('names the hooks file and the first retry delay, 1 s by default, and refuses a delay that is not a positive integer', () => {
    expect(loadConfig({}, {}).webhooksFile).toBeUndefined();
    expect(loadConfig({}, {}).webhooksRetryMs).toBe(1_000);
    expect(loadConfig({}, { MEMORYPOOL_WEBHOOKS_FILE: '/etc/memorypool/hooks.json', MEMORYPOOL_WEBHOOKS_RETRY_MS: '50' })).toMatchObject({ webhooksFile: '/etc/memorypool/hooks.json', webhooksRetryMs: 50 });
    expect(() => loadConfig({}, { MEMORYPOOL_WEBHOOKS_RETRY_MS: '0' })).toThrow(/MEMORYPOOL_WEBHOOKS_RETRY_MS/);
  });
});
