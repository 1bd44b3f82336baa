import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { HttpEmbedder } from '../../src/embedding/http-embedder.js';
import { register } from '../support/helper.js';

interface Call {
  authorization?: string;
  body: { model: string; input: string[]; dimensions: number };
}

/** A small OpenAI-compatible embeddings server on loopback, scripted per call. */
async function fakeServer(answer: (call: Call, index: number) => { status: number; body: unknown; delayMs?: number }): Promise<{ url: string; calls: Call[] }> {
  const calls: Call[] = [];
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    let raw = '';
    request.on('data', (chunk) => (raw += chunk));
    request.on('end', () => {
      const call: Call = { authorization: request.headers.authorization, body: JSON.parse(raw) };
      const { status, body, delayMs } = answer(call, calls.length);
      calls.push(call);
      setTimeout(() => {
        response.writeHead(status, { 'content-type': 'application/json' });
        response.end(JSON.stringify(body));
      }, delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  register(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, calls };
}

const embeddingsOf = (input: string[], dims: number) => ({
  data: input.map((text, index) => ({ index, embedding: Array.from({ length: dims }, (_, d) => (d === text.length % dims ? 3 : 0)) })).reverse(),
});

describe('HttpEmbedder', () => {
  it('batches, sends the key and model, restores order and normalises', async () => {
    const { url, calls } = await fakeServer((call) => ({ status: 200, body: embeddingsOf(call.body.input, 4) }));
    const embedder = new HttpEmbedder({ baseUrl: url, model: 'text-embed', dimensions: 4, apiKey: 'sk-test', batchSize: 2 });
    const vectors = await embedder.embed(['a', 'bb', 'ccc']);
    expect(calls).toHaveLength(2);
    expect(calls[0].authorization).toBe('Bearer sk-test');
    expect(calls[0].body).toEqual({ model: 'text-embed', input: ['a', 'bb'], dimensions: 4 });
    expect(vectors.map((vector) => [...vector])).toEqual([
      [0, 1, 0, 0],
      [0, 0, 1, 0],
      [0, 0, 0, 1],
    ]);
    expect(embedder.modelId).toContain('text-embed');
  });

  it('retries 429 and 5xx, then succeeds', async () => {
    const { url, calls } = await fakeServer((call, index) => (index < 2 ? { status: index === 0 ? 429 : 503, body: { error: 'busy' } } : { status: 200, body: embeddingsOf(call.body.input, 4) }));
    const embedder = new HttpEmbedder({ baseUrl: url, model: 'm', dimensions: 4, retries: 3 });
    expect(await embedder.embed(['x'])).toHaveLength(1);
    expect(calls).toHaveLength(3);
  });

  it('gives up after its retries, and at once on a 4xx or a wrong dimension', async () => {
    const failing = await fakeServer(() => ({ status: 500, body: {} }));
    await expect(new HttpEmbedder({ baseUrl: failing.url, model: 'm', dimensions: 4, retries: 1 }).embed(['x'])).rejects.toThrow(/after 2 attempts/);
    expect(failing.calls).toHaveLength(2);
    const refused = await fakeServer(() => ({ status: 401, body: { error: 'bad key' } }));
    await expect(new HttpEmbedder({ baseUrl: refused.url, model: 'm', dimensions: 4 }).embed(['x'])).rejects.toThrow(/401/);
    expect(refused.calls).toHaveLength(1);
    const wrongSize = await fakeServer((call) => ({ status: 200, body: embeddingsOf(call.body.input, 3) }));
    await expect(new HttpEmbedder({ baseUrl: wrongSize.url, model: 'm', dimensions: 4 }).embed(['x'])).rejects.toThrow(/dimensions/);
  });

  it('times out a call that does not answer', async () => {
    const { url } = await fakeServer((call) => ({ status: 200, body: embeddingsOf(call.body.input, 4), delayMs: 2_000 }));
    const embedder = new HttpEmbedder({ baseUrl: url, model: 'm', dimensions: 4, timeoutMs: 100, retries: 0 });
    await expect(embedder.embed(['x'])).rejects.toThrow();
  });

  it('refuses an empty text without calling the service', async () => {
    const { url, calls } = await fakeServer((call) => ({ status: 200, body: embeddingsOf(call.body.input, 4) }));
    await expect(new HttpEmbedder({ baseUrl: url, model: 'm', dimensions: 4 }).embed(['  '])).rejects.toThrow(/empty/);
    expect(calls).toHaveLength(0);
  });
});
