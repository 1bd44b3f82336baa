import http from 'node:http';

/**
 * Bounded request loops on loopback: `concurrency` clients, each sending its next request as
 * soon as the previous one is answered (a closed loop, like the platform's workers). Every
 * answer is checked, because the platform aborts a stage on one malformed answer.
 */

export interface Answer {
  status: number;
  text: string;
  /** From sending the request to the last byte of the answer. */
  ms: number;
}

/** What a check makes of an answer: `null` when it is right, else the kind of error. */
export type Check = (answer: Answer) => string | null;

export interface LatencyStats {
  count: number;
  p50: number;
  p95: number;
  p99: number;
  mean: number;
  max: number;
}

export interface LoadResult {
  concurrency: number;
  requests: number;
  ok: number;
  errors: number;
  /** Errors by kind: `http_<status>`, `invalid_body`, `timeout`, `network_<code>`. */
  error_kinds: Record<string, number>;
  /** A few errors in full, for diagnosis. */
  error_samples: string[];
  elapsed_s: number;
  per_s: number;
  latency_ms: LatencyStats;
}

/** Keep-alive HTTP/1.1 client for one server, as many sockets as clients. */
export class LoopbackClient {
  private readonly agent: http.Agent;
  private readonly url: URL;

  constructor(baseUrl: string, maxSockets: number) {
    this.url = new URL(baseUrl);
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  post(path: string, body: string, timeoutMs: number): Promise<Answer> {
    return this.request('POST', path, body, timeoutMs);
  }

  get(path: string, timeoutMs: number): Promise<Answer> {
    return this.request('GET', path, null, timeoutMs);
  }

  delete(path: string, timeoutMs: number): Promise<Answer> {
    return this.request('DELETE', path, null, timeoutMs);
  }

  private request(method: string, path: string, body: string | null, timeoutMs: number): Promise<Answer> {
    const payload = body === null ? null : Buffer.from(body, 'utf8');
    return new Promise((resolve, reject) => {
      const started = performance.now();
      const request = http.request(
        {
          host: this.url.hostname,
          port: this.url.port,
          path,
          method,
          agent: this.agent,
          headers: payload === null ? {} : { 'content-type': 'application/json', 'content-length': payload.length },
          timeout: timeoutMs,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on('data', (chunk: Buffer) => chunks.push(chunk));
          response.on('error', reject);
          response.on('end', () => resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8'), ms: performance.now() - started }));
        },
      );
      request.on('timeout', () => request.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'TIMEOUT' })));
      request.on('error', reject);
      if (payload === null) request.end();
      else request.end(payload);
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

/** One unlabelled sample of the server's `/metrics` (`name value`), or null when it has no such figure. */
export async function metricValue(client: LoopbackClient, name: string): Promise<number | null> {
  const line = (await client.get('/metrics', 10_000)).text.split('\n').find((candidate) => candidate.startsWith(`${name} `));
  return line === undefined ? null : Number(line.slice(name.length + 1));
}

export interface LoadOptions<J> {
  client: LoopbackClient;
  path: string;
  concurrency: number;
  /** The next request body, or undefined when there are no more. */
  nextBody: () => J | undefined;
  serialize?: (job: J) => string;
  check: Check;
  /** Stop starting requests after this long (requests in flight still finish and count). */
  durationMs?: number;
  timeoutMs: number;
}

export async function runLoad<J>(options: LoadOptions<J>): Promise<LoadResult> {
  const serialize = options.serialize ?? ((job: J) => JSON.stringify(job));
  const latencies: number[] = [];
  const errorKinds: Record<string, number> = {};
  const errorSamples: string[] = [];
  let requests = 0;
  const started = performance.now();
  const deadline = options.durationMs === undefined ? Infinity : started + options.durationMs;
  let lastAnswer = started;

  const fail = (kind: string, detail: string): void => {
    errorKinds[kind] = (errorKinds[kind] ?? 0) + 1;
    if (errorSamples.length < 5) errorSamples.push(`${kind}: ${detail.slice(0, 300)}`);
  };

  const client = async (): Promise<void> => {
    while (performance.now() < deadline) {
      const job = options.nextBody();
      if (job === undefined) return;
      requests++;
      try {
        const answer = await options.client.post(options.path, serialize(job), options.timeoutMs);
        const problem = options.check(answer);
        if (problem === null) latencies.push(answer.ms);
        else fail(problem, `${answer.status} ${answer.text}`);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        fail(code === 'TIMEOUT' ? 'timeout' : `network_${code ?? 'error'}`, (error as Error).message);
      }
      lastAnswer = performance.now();
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, client));

  const elapsedS = (lastAnswer - started) / 1000;
  const errors = requests - latencies.length;
  return {
    concurrency: options.concurrency,
    requests,
    ok: latencies.length,
    errors,
    error_kinds: errorKinds,
    error_samples: errorSamples,
    elapsed_s: round(elapsedS, 2),
    per_s: round(latencies.length / Math.max(elapsedS, 1e-9), 1),
    latency_ms: latencyStats(latencies),
  };
}

/** Nearest-rank percentiles of successful requests, in ms. */
export function latencyStats(values: readonly number[]): LatencyStats {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number): number => (sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]);
  const mean = sorted.length === 0 ? NaN : sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return {
    count: sorted.length,
    p50: round(at(50), 2),
    p95: round(at(95), 2),
    p99: round(at(99), 2),
    mean: round(mean, 2),
    max: round(sorted.at(-1) ?? NaN, 2),
  };
}

/** An Add is right when it is a 200 acknowledging the same request. */
export function checkAdd(answer: Answer): string | null {
  if (answer.status !== 200) return `http_${answer.status}`;
  const body = parseObject(answer.text);
  return body?.success === true && typeof body.request_id === 'string' ? null : 'invalid_body';
}

/** A Search is right when it is a 200 with at least one well-formed hit (every bench user has memories). */
export function checkSearch(answer: Answer): string | null {
  if (answer.status !== 200) return `http_${answer.status}`;
  const data = parseObject(answer.text)?.data;
  if (!Array.isArray(data) || data.length === 0) return 'invalid_body';
  for (const hit of data as Array<Record<string, unknown>>) {
    if (typeof hit?.id !== 'string' || typeof hit.content !== 'string' || typeof hit.score !== 'number' || !Number.isFinite(hit.score)) return 'invalid_body';
  }
  return null;
}

function parseObject(text: string): Record<string, unknown> | null {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

export function round(value: number, digits: number): number {
  if (!Number.isFinite(value)) return value;
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
