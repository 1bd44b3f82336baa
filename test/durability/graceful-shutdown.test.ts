import { createServer, request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import net from 'node:net';
import { readFile, stat } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { silentLogger } from '../../src/logger.js';
import { JsonlStore } from '../../src/store/jsonl-store.js';
import { register, tempDir } from '../support/helper.js';
import { KEEP_GRAPHS, request, sleep, startServerProcess, type ServerProcess } from '../support/server-process.js';

/**
 * SIGTERM drains: what was accepted before the signal finishes and is acknowledged, what comes
 * after it is a 503 with the error body (or a refused connection once the server has closed),
 * the index caches are written, and the process exits 0.
 */

const DIMENSIONS = 32;

/**
 * An OpenAI-compatible embeddings endpoint on loopback whose answers wait behind a gate: while
 * it is shut, an Add sits inside the service (embedding), so "in flight at SIGTERM" is certain
 * rather than a matter of timing.
 */
async function gatedEmbedder(): Promise<{ url: string; received: () => number; open: () => void }> {
  const hash = new HashEmbedder({ dimensions: DIMENSIONS });
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  let received = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', async () => {
      received++;
      const input = (JSON.parse(body) as { input: string[] }).input;
      const vectors = await hash.embed(input);
      await gate;
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ data: vectors.map((vector, index) => ({ index, embedding: Array.from(vector) })) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  register(
    () =>
      new Promise<void>((resolve) => {
        release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const { port } = server.address() as net.AddressInfo;
  return { url: `http://127.0.0.1:${port}/v1`, received: () => received, open: release };
}

function embedderEnv(url: string): Record<string, string> {
  return {
    ...KEEP_GRAPHS,
    MEMORYPOOL_EMBEDDER: 'http',
    MEMORYPOOL_EMBEDDER_URL: url,
    MEMORYPOOL_EMBEDDER_MODEL: 'gated-test',
    MEMORYPOOL_EMBEDDER_DIMENSIONS: String(DIMENSIONS),
    MEMORYPOOL_LOG_LEVEL: 'info',
  };
}

function addBody(i: number, userId: string) {
  return {
    request_id: `drain-${i}`,
    user_id: userId,
    session_id: `s-${i}`,
    messages: [
      { role: 'Caroline', content: `Drain note ${i}: the lighthouse keeper paints seashells`, timestamp: 1_700_000_000_000 + i },
      { role: 'Melanie', content: `Drain reply ${i}: and sells them at the harbour market`, timestamp: 1_700_000_000_001 + i },
    ],
  };
}

const drained = (record: Record<string, unknown>) => record.msg === 'draining';

function expectShuttingDown(response: { status: number; body: any; headers?: Record<string, string> }): void {
  expect(response.status).toBe(503);
  expect(typeof response.body?.detail?.reason).toBe('string');
  expect(response.body.detail.reason.length).toBeGreaterThan(0);
}

/** A request on a brand-new connection; a refused connection is reported as such. */
function freshRequest(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any; headers: Record<string, string> } | 'refused'> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = httpRequest(`${url}${path}`, { method, agent: false, headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}, timeout: 5_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : undefined, headers: res.headers as Record<string, string> }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (error: NodeJS.ErrnoException) => (error.code === 'ECONNREFUSED' ? resolve('refused') : reject(error)));
    req.end(payload);
  });
}

async function expectIndexCaches(dataDir: string, userIds: string[]): Promise<void> {
  const store = new JsonlStore(dataDir, silentLogger());
  for (const userId of userIds) {
    expect((await stat(store.cacheFilePath(userId, 'vectors.hnsw'))).size).toBeGreaterThan(0);
    const meta = JSON.parse(await readFile(store.cacheFilePath(userId, 'vectors.meta.json'), 'utf8'));
    expect(meta.dimensions).toBe(DIMENSIONS);
  }
}

async function listTexts(server: ServerProcess, userId: string): Promise<string[]> {
  const response = await request(`${server.url}/mem/list?user_id=${encodeURIComponent(userId)}&limit=1000`);
  expect(response.status).toBe(200);
  return (response.body as Array<{ text: string }>).map((memory) => memory.text);
}

describe('graceful shutdown (SIGTERM)', () => {
  it('finishes the Adds in flight with 200, answers 503 to new requests, writes the index caches, exits 0', async () => {
    const embedder = await gatedEmbedder();
    const dataDir = await tempDir('memorypool-drain-');
    const server = await startServerProcess({ dataDir, env: embedderEnv(embedder.url) });
    const users = ['drain-u0', 'drain-u1', 'drain-u2'];

    // Six Adds, all waiting inside the service on the shut embedder: the first one's batch is at
    // the embedder, the others queue behind it (the server runs one embedding call at a time).
    const inFlight = Array.from({ length: 6 }, (_, i) => addBody(i, users[i % users.length]));
    const answers = inFlight.map((body) => request(`${server.url}/add`, { body, timeoutMs: 15_000 }));
    const deadline = performance.now() + 5_000;
    while (embedder.received() < 1 && performance.now() < deadline) await sleep(20);
    expect(embedder.received()).toBeGreaterThanOrEqual(1);
    await sleep(300); // The server is otherwise idle: the other five have long reached the service.

    server.child.kill('SIGTERM');
    await server.waitForLog(drained);

    // Arriving after the signal: 503 with the error body, on every kind of route.
    for (const [method, path, body] of [
      ['POST', '/add', addBody(99, 'drain-u0')],
      ['POST', '/search', { query: 'lighthouse', user_id: 'drain-u0', top_k: 5 }],
      ['GET', '/mem/list?user_id=drain-u0', undefined],
      ['POST', '/invoke', { params: { action: 'stats' } }],
    ] as const) {
      const response = await freshRequest(server.url, method, path, body);
      expect(response, `${method} ${path}`).not.toBe('refused'); // The drain is still waiting on the Adds.
      if (response === 'refused') continue;
      expectShuttingDown(response);
      expect(response.headers['retry-after']).toBe('1');
    }

    embedder.open();
    for (const [i, answer] of answers.entries()) {
      const response = await answer;
      expect(response.status, response.text).toBe(200);
      expect(response.body).toEqual({ success: true, request_id: inFlight[i].request_id, user_id: inFlight[i].user_id, session_id: inFlight[i].session_id });
    }
    expect(await server.waitForExit()).toEqual({ code: 0, signal: null });
    expect(await freshRequest(server.url, 'GET', '/health')).toBe('refused');
    await expectIndexCaches(dataDir, users);

    // The acknowledged Adds are there after a restart, served from the flushed caches.
    const restarted = await startServerProcess({ dataDir, env: embedderEnv(embedder.url) });
    for (const userId of users) {
      const expected = inFlight.filter((body) => body.user_id === userId).flatMap((body) => body.messages.map((message) => message.content));
      expect((await listTexts(restarted, userId)).sort()).toEqual(expected.sort());
    }
    expect(restarted.stderr()).not.toMatch(/rebuild/i);
    expect(await restarted.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  });

  it('an Add whose headers arrived before SIGTERM is in flight: acknowledged and stored even though its body arrives after', async () => {
    const dataDir = await tempDir('memorypool-drain-');
    const server = await startServerProcess({ dataDir, env: { MEMORYPOOL_LOG_LEVEL: 'info' } });
    const connection = await rawConnection(server.port);
    const first = JSON.stringify(addBody(1, 'slow-u'));
    connection.write(head(first) + first.slice(0, 40));
    await sleep(300); // The server is idle: it has read the headers and admitted the request.

    server.child.kill('SIGTERM');
    await server.waitForLog(drained);
    connection.write(first.slice(40));
    const responses = await connection.responses();
    // The answer closes the connection: a kept-alive one must not hold the exit open.
    expect(responses.closedByServer).toBe(true);
    expect(await server.waitForExit()).toEqual({ code: 0, signal: null });

    expect(responses.length, connection.received()).toBe(1);
    expect(responses[0].status, connection.received()).toBe(200);
    expect(JSON.parse(responses[0].body)).toMatchObject({ success: true, request_id: 'drain-1' });
    const restarted = await startServerProcess({ dataDir });
    expect((await listTexts(restarted, 'slow-u')).some((text) => text.startsWith('Drain note 1'))).toBe(true);
  });

  it('a request pipelined behind it on the same connection is refused (503 with the error body, or the connection closes before it is read) and not stored', async () => {
    const dataDir = await tempDir('memorypool-drain-');
    const server = await startServerProcess({ dataDir, env: { MEMORYPOOL_LOG_LEVEL: 'info' } });
    const connection = await rawConnection(server.port);
    const first = JSON.stringify(addBody(1, 'slow-u'));
    const second = JSON.stringify(addBody(2, 'slow-u'));
    connection.write(head(first) + first.slice(0, 40));
    await sleep(300);

    server.child.kill('SIGTERM');
    await server.waitForLog(drained);
    connection.write(first.slice(40) + head(second) + second);
    const responses = await connection.responses();
    expect(await server.waitForExit()).toEqual({ code: 0, signal: null });

    // The second request either is answered 503 with the error body, or the connection closes
    // before it is read (the client sees a closed connection, as if refused).
    expect(responses.closedByServer).toBe(true);
    expect(responses.length, connection.received()).toBeGreaterThanOrEqual(1);
    if (responses.length > 1) expectShuttingDown({ status: responses[1].status, body: JSON.parse(responses[1].body) });
    const restarted = await startServerProcess({ dataDir });
    expect((await listTexts(restarted, 'slow-u')).some((text) => text.startsWith('Drain note 2'))).toBe(false);
  });
});

function head(payload: string): string {
  return `POST /add HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n`;
}

/** A plain TCP connection speaking HTTP/1.1 by hand, so a body can be sent in two halves. */
async function rawConnection(port: number) {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  return {
    write: (data: string) => socket.write(data),
    received: () => received,
    /** Waits (bounded) for the server to close the connection, then parses what it sent. */
    async responses() {
      const closedByServer = await Promise.race([closed.then(() => true), sleep(5_000).then(() => false)]);
      socket.destroy();
      return Object.assign(parseResponses(received), { closedByServer });
    },
  };
}

/** Splits HTTP/1.1 responses received back to back on one connection (Content-Length bodies). */
function parseResponses(raw: string): Array<{ status: number; headers: Record<string, string>; body: string }> {
  const out: Array<{ status: number; headers: Record<string, string>; body: string }> = [];
  let rest = raw;
  while (rest.startsWith('HTTP/1.1 ')) {
    const headerEnd = rest.indexOf('\r\n\r\n');
    if (headerEnd === -1) break;
    const [statusLine, ...headerLines] = rest.slice(0, headerEnd).split('\r\n');
    const headers = Object.fromEntries(headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
    const length = Number(headers['content-length'] ?? 0);
    const body = Buffer.from(rest.slice(headerEnd + 4), 'utf8').subarray(0, length).toString('utf8');
    out.push({ status: Number(statusLine.split(' ')[1]), headers, body });
    rest = Buffer.from(rest.slice(headerEnd + 4), 'utf8').subarray(length).toString('utf8');
  }
  return out;
}
