import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An OpenAI-compatible chat endpoint for the QA tests, on a loopback port. The answer model
 * replies with every memory it was shown, joined; the judge says CORRECT when the generated answer
 * holds the gold one. Questions containing a trigger word misbehave: `slowWord` stalls its first
 * request past the client's timeout, `limitedWord` gets one 429 with retry-after, `failingWord`
 * always answers 500.
 */
export interface FakeLlmOptions {
  slowWord: string;
  slowMs: number;
  limitedWord: string;
  retryAfterSeconds: number;
  failingWord: string;
}

export interface FakeRequest {
  model: string;
  question: string;
  status: number;
  at: number;
}

export interface FakeLlm {
  baseUrl: string;
  requests: FakeRequest[];
  /** Per model and question, the usage of the last reply sent with 200. */
  lastUsage: Map<string, number>;
  close(): Promise<void>;
}

export async function startFakeLlm(options: FakeLlmOptions): Promise<FakeLlm> {
  const requests: FakeRequest[] = [];
  const lastUsage = new Map<string, number>();
  const seen = new Set<string>();
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    let raw = '';
    for await (const chunk of request) raw += chunk;
    if (request.method !== 'POST' || request.url !== '/v1/chat/completions') return send(response, 404, { error: 'not found' });
    const body = JSON.parse(raw) as { model: string; messages: Array<{ role: string; content: string }> };
    const user = body.messages.find((message) => message.role === 'user')?.content ?? '';
    const question = /Question: (.*)/.exec(user)?.[1] ?? '';
    const key = `${body.model}|${question}`;
    const first = !seen.has(key);
    seen.add(key);
    const log = (status: number) => requests.push({ model: body.model, question, status, at: Date.now() });
    if (question.includes(options.failingWord)) {
      log(500);
      return send(response, 500, { error: { message: 'upstream exploded' } });
    }
    if (first && question.includes(options.limitedWord)) {
      log(429);
      response.setHeader('retry-after', String(options.retryAfterSeconds));
      return send(response, 429, { error: { message: 'slow down' } });
    }
    if (first && question.includes(options.slowWord)) {
      log(0);
      await new Promise((resolve) => setTimeout(resolve, options.slowMs));
      if (response.destroyed || request.destroyed) return;
    }
    const text = body.model === 'judge' ? judge(user) : answer(user);
    const promptTokens = body.messages.reduce((sum, message) => sum + words(message.content), 0);
    const usage = { prompt_tokens: promptTokens, completion_tokens: words(text), total_tokens: promptTokens + words(text) };
    lastUsage.set(key, usage.total_tokens);
    log(200);
    send(response, 200, { id: 'x', object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }], usage });
  };
  const server: Server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => send(response, 500, { error: String(error) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    lastUsage,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function answer(prompt: string): string {
  const memories = prompt.split('\n').filter((line) => line.startsWith('- ')).map((line) => line.slice(2));
  return memories.length === 0 ? 'I do not know.' : memories.join(' | ');
}

function judge(prompt: string): string {
  const gold = /Gold answer: (.*)/.exec(prompt)?.[1] ?? '';
  const generated = /Generated answer: (.*)/.exec(prompt)?.[1] ?? '';
  return `Grade: ${gold !== '' && generated.toLowerCase().includes(gold.toLowerCase()) ? 'CORRECT' : 'WRONG'}`;
}

function words(text: string): number {
  return text.split(/\s+/).filter(Boolean).length;
}

function send(response: ServerResponse, status: number, body: unknown): void {
  if (response.destroyed) return;
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}
