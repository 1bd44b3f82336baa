import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { sleep } from '../support/helper.js';
import { startEdgeServer } from './edge-server.js';

/**
 * Slow-loris clients on real loopback sockets: connections that trickle their headers or their
 * body a byte at a time are cut off by the header and request timeouts, and while many of them
 * hang on, an ordinary request is still answered.
 */

interface Trickle {
  socket: net.Socket;
  /** Resolves with what the server sent and how long after the connection it closed. */
  closed: Promise<{ received: string; afterMs: number }>;
  stop(): void;
}

/** Connects, sends `head` and then one byte of `drip` every `everyMs`, for at most `maxMs`. */
function trickle(url: string, head: string, drip: string, everyMs: number, maxMs: number): Trickle {
  const { hostname, port } = new URL(url);
  const socket = net.connect({ host: hostname, port: Number(port) });
  const started = Date.now();
  let received = '';
  let timer: NodeJS.Timeout | null = null;
  const stop = () => {
    if (timer) clearInterval(timer);
    timer = null;
  };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('connect', () => {
    socket.write(head);
    let i = 0;
    timer = setInterval(() => {
      if (Date.now() - started > maxMs) {
        stop();
        socket.destroy();
        return;
      }
      if (!socket.destroyed && socket.writable) socket.write(drip[i++ % drip.length]);
    }, everyMs);
  });
  const closed = new Promise<{ received: string; afterMs: number }>((resolve) => {
    socket.on('close', () => {
      stop();
      resolve({ received, afterMs: Date.now() - started });
    });
    socket.on('error', () => undefined);
  });
  return { socket, closed, stop };
}

describe('slow clients', () => {
  it('a client trickling its headers is cut off after the header timeout with a 408', async () => {
    const server = await startEdgeServer({ headersTimeoutMs: 500, requestTimeoutMs: 5_000 });
    const loris = trickle(server.url, 'POST /search HTTP/1.1\r\nHost: localhost\r\n', 'X-Slow: aaaaaaaaaaaaaaa\r\n', 50, 8_000);
    const { received, afterMs } = await loris.closed;
    expect(received).toMatch(/^HTTP\/1\.1 408/);
    expect(afterMs).toBeGreaterThanOrEqual(450);
    expect(afterMs).toBeLessThan(3_000);
  });

  it('a client trickling its body is cut off after the request timeout with a 408', async () => {
    const server = await startEdgeServer({ headersTimeoutMs: 500, requestTimeoutMs: 1_500 });
    const head = 'POST /search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n';
    const loris = trickle(server.url, head, '{"query": "slow"', 50, 10_000);
    const { received, afterMs } = await loris.closed;
    expect(received).toMatch(/^HTTP\/1\.1 408/);
    expect(afterMs).toBeGreaterThanOrEqual(1_400);
    expect(afterMs).toBeLessThan(5_000);
  });

  it('a connection that never sends a byte is closed after the header timeout', async () => {
    const server = await startEdgeServer({ headersTimeoutMs: 500, requestTimeoutMs: 5_000 });
    const silent = trickle(server.url, '', ' ', 60_000, 8_000);
    const { afterMs } = await silent.closed;
    expect(afterMs).toBeLessThan(3_000);
  });

  it('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
    const server = await startEdgeServer({ keepAliveTimeoutMs: 300 });
    const idle = trickle(server.url, 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n', ' ', 60_000, 8_000);
    const { received, afterMs } = await idle.closed;
    expect(received).toMatch(/^HTTP\/1\.1 200/);
    expect(afterMs).toBeLessThan(2_500);
  });

  it('while 200 slow-loris connections hang on, an ordinary search is answered at once; they are all cut off', async () => {
    const server = await startEdgeServer({ headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 });
    const lorises = Array.from({ length: 200 }, (_, i) =>
      trickle(server.url, `POST /search HTTP/1.1\r\nHost: localhost\r\nX-Client: ${i}\r\n`, 'X-Slow: a\r\n', 100, 10_000),
    );
    await sleep(300);
    const started = Date.now();
    const response = await fetch(`${server.url}/search`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: 'anything', user_id: 'nobody', top_k: 5 }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: [] });
    expect(Date.now() - started).toBeLessThan(1_000);
    const outcomes = await Promise.all(lorises.map((loris) => loris.closed));
    for (const outcome of outcomes) expect(outcome.afterMs).toBeLessThan(5_000);
  });
});
