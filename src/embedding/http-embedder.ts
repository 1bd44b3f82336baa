import type { Embedder } from './embedder.js';

export interface HttpEmbedderOptions {
  /** Base URL of an OpenAI-compatible API, e.g. https://api.example.com/v1 (POST {base}/embeddings). */
  baseUrl: string;
  model: string;
  dimensions: number;
  apiKey?: string;
  batchSize?: number;
  timeoutMs?: number;
  retries?: number;
  fetch?: typeof fetch;
}

/**
 * An OpenAI-compatible embeddings client, for deployments that must use a hosted model.
 * Batches texts, retries transient failures (429, 5xx, network) with exponential backoff,
 * times out each call, and normalises vectors so cosine is a dot product as with the local model.
 */
export class HttpEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly options: Required<Omit<HttpEmbedderOptions, 'apiKey'>> & { apiKey?: string };

  constructor(options: HttpEmbedderOptions) {
    this.options = { batchSize: 64, timeoutMs: 30_000, retries: 3, fetch: globalThis.fetch, ...options };
    this.options.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.dimensions = options.dimensions;
    this.modelId = `http:${this.options.baseUrl}#${options.model}/${options.dimensions}`;
  }

  async ready(): Promise<void> {}

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    for (let start = 0; start < texts.length; start += this.options.batchSize) {
      out.push(...(await this.embedBatch(texts.slice(start, start + this.options.batchSize))));
    }
    return out;
  }

  async close(): Promise<void> {}

  private async embedBatch(texts: readonly string[]): Promise<Float32Array[]> {
    for (const text of texts) if (text.trim() === '') throw new Error('HttpEmbedder: cannot embed an empty text');
    let lastError: unknown;
    for (let attempt = 0; attempt <= this.options.retries; attempt++) {
      if (attempt > 0) await sleep(Math.min(8_000, 250 * 2 ** (attempt - 1)));
      try {
        const response = await this.options.fetch(`${this.options.baseUrl}/embeddings`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            ...(this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {}),
          },
          body: JSON.stringify({ model: this.options.model, input: texts, dimensions: this.dimensions }),
          signal: AbortSignal.timeout(this.options.timeoutMs),
        });
        if (response.status === 429 || response.status >= 500) {
          lastError = new Error(`embedding service answered ${response.status}`);
          continue;
        }
        if (!response.ok) throw new PermanentError(`embedding service answered ${response.status}: ${(await response.text()).slice(0, 200)}`);
        return this.parse(await response.json(), texts.length);
      } catch (error) {
        if (error instanceof PermanentError) throw error;
        lastError = error;
      }
    }
    throw new Error(`embedding service failed after ${this.options.retries + 1} attempts: ${(lastError as Error)?.message ?? lastError}`);
  }

  private parse(body: unknown, expected: number): Float32Array[] {
    const data = (body as { data?: Array<{ index?: number; embedding?: unknown }> })?.data;
    if (!Array.isArray(data) || data.length !== expected) throw new PermanentError('embedding service returned a malformed body');
    const ordered = [...data].sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
    return ordered.map((item) => {
      const values = item.embedding;
      if (!Array.isArray(values) || values.length !== this.dimensions) {
        throw new PermanentError(`embedding service returned ${Array.isArray(values) ? values.length : 'no'} dimensions, expected ${this.dimensions}`);
      }
      const vector = Float32Array.from(values as number[]);
      let norm = 0;
      for (const value of vector) norm += value * value;
      const scale = norm > 0 ? 1 / Math.sqrt(norm) : 1;
      for (let i = 0; i < vector.length; i++) vector[i] *= scale;
      return vector;
    });
  }
}

class PermanentError extends Error {}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
