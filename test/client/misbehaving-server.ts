import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real socket that misbehaves on cue, for the clients' shared behaviour table
 * (behaviour-cases.json): each attempt gets the next scripted reply (the last one repeats): a
 * status with headers and a body, a delay before answering, or a destroyed connection. It records
 * every attempt (method, path, query, headers, body) so a test checks retries exactly. The Python
 * client's tests drive it over HTTP: `POST /__case` with `{replies}` arms it, `GET /__attempts`
 * reads what arrived.
 */

export type Reply =
  | { status: number; headers?: Record<string, string>; body?: unknown; delayMs?: number }
  | { drop: true };

export interface Attempt {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
}

export interface MisbehavingServer {
  url: string;
  arm(replies: Reply[]): void;
  attempts(): Attempt[];
  close(): Promise<void>;
}

export async function startMisbehavingServer(): Promise<MisbehavingServer> {
  let replies: Reply[] = [{ status: 200, body: {} }];
  let attempts: Attempt[] = [];
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const url = new URL(request.url ?? '/', 'http://localhost');
    if (url.pathname === '/__case') {
      replies = (JSON.parse(text) as { replies: Reply[] }).replies;
      attempts = [];
      return send(response, { status: 200, body: { armed: replies.length } });
    }
    if (url.pathname === '/__attempts') return send(response, { status: 200, body: { attempts } });
    attempts.push({
      method: request.method ?? '',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: request.headers,
      body: text === '' ? undefined : JSON.parse(text),
    });
    const reply = replies[Math.min(attempts.length - 1, replies.length - 1)];
    if ('drop' in reply) return request.socket.destroy();
    if (reply.delayMs) await new Promise((resolve) => setTimeout(resolve, reply.delayMs));
    if (!response.destroyed) send(response, reply);
  });
  // A timed-out client leaves its connection behind; never keep the process waiting on it.
  server.keepAliveTimeout = 100;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    arm(next) {
      replies = next;
      attempts = [];
    },
    attempts: () => attempts,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function send(response: http.ServerResponse, reply: { status: number; headers?: Record<string, string>; body?: unknown }): void {
  const text = reply.body === undefined ? '' : JSON.stringify(reply.body);
  response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  response.end(text);
}
