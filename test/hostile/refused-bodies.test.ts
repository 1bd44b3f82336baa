import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { startEdgeServer } from './edge-server.js';

/**
 * A body the server refuses before it has arrived is not read to its end: the answer closes the
 * connection, so a client sending megabytes again and again costs the server one header parse each.
 * Requests whose body did arrive keep their connection alive as before.
 */

interface Exchange {
  /** Everything the server sent until it closed the connection (or until `maxMs`). */
  received: string;
  /** Whether the server closed the connection before `maxMs`. */
  closedByServer: boolean;
  /** Body bytes the client managed to write before the connection closed. */
  bodyBytesWritten: number;
}

/** Sends `head`, then writes `bodyBytes` bytes of `x` in 64 KiB chunks as fast as the socket takes them. */
function send(url: string, requests: string, bodyBytes: number, maxMs: number): Promise<Exchange> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    let received = '';
    let written = 0;
    let settled = false;
    const finish = (closedByServer: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ received, closedByServer, bodyBytesWritten: written });
    };
    const timer = setTimeout(() => finish(false), maxMs);
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('close', () => finish(true));
    socket.on('error', () => finish(true));
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const pump = () => {
      while (written < bodyBytes && !socket.destroyed) {
        const piece = chunk.subarray(0, Math.min(chunk.length, bodyBytes - written));
        written += piece.length;
        if (!socket.write(piece)) return void socket.once('drain', pump);
      }
    };
    socket.on('connect', () => {
      socket.write(requests);
      pump();
    });
  });
}

describe('bodies refused before they arrive', () => {
  it('a Search declaring 64 MB gets its 413 and the connection is closed without reading the body', async () => {
    const server = await startEdgeServer();
    const bodyBytes = 64 * 1024 * 1024;
    const head = `POST /search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n\r\n`;
    const exchange = await send(server.url, head, bodyBytes, 20_000);
    expect(exchange.received).toMatch(/^HTTP\/1\.1 413/);
    expect(exchange.received.toLowerCase()).toContain('connection: close');
    expect(exchange.received).toContain('{"detail":{"reason":"Request body is too large"}}');
    expect(exchange.closedByServer).toBe(true);
    // The server hung up long before the client could push 64 MB through (socket buffers hold a few MB at most).
    expect(exchange.bodyBytesWritten).toBeLessThan(bodyBytes);
  });

  it('a request without a token gets its 401 and the connection is closed before the body is read', async () => {
    const server = await startEdgeServer({ token: 'secret-token' });
    const bodyBytes = 64 * 1024 * 1024;
    const head = `POST /add HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${bodyBytes}\r\n\r\n`;
    const exchange = await send(server.url, head, bodyBytes, 20_000);
    expect(exchange.received).toMatch(/^HTTP\/1\.1 401/);
    expect(exchange.received.toLowerCase()).toContain('connection: close');
    expect(exchange.closedByServer).toBe(true);
    expect(exchange.bodyBytesWritten).toBeLessThan(bodyBytes);
  });

  it('requests whose bodies arrived keep one connection alive: three answers on one socket', async () => {
    const server = await startEdgeServer();
    const body = JSON.stringify({ query: 'anything', user_id: 'nobody', top_k: 5 });
    const search = `POST /search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const health = 'GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n';
    const exchange = await send(server.url, search + health + search, 0, 1_500);
    expect(exchange.received.match(/HTTP\/1\.1 200/g)).toHaveLength(3);
    expect(exchange.received.toLowerCase()).not.toContain('connection: close');
    expect(exchange.closedByServer).toBe(false);
  });
});
