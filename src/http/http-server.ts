import { readFileSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { FastifyServerFactory } from 'fastify';
import { isTls } from '../config.js';

/**
 * The Node server under the fastify app: plain HTTP or, given a certificate and key, HTTPS, with
 * the timeouts that keep slow clients from holding connections open. A slow-loris client opens
 * many connections and trickles a byte now and then so none ever completes a request; an idle
 * timeout never fires on it, so the bounds are on how long the headers, and the whole request
 * (headers and body), may take to arrive. The handler's own time (a search, an Add being
 * encoded) is not bounded here: that is the server's work, not the client's.
 */
export interface HttpServerOptions {
  /** PEM certificate chain and private key files: both to serve HTTPS, neither for HTTP. */
  tlsCert?: string;
  tlsKey?: string;
  /** The request line and every header must arrive within this (ms), or the connection is closed with 408. */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this (ms), or 408 and the connection is closed. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this (ms). */
  keepAliveTimeoutMs: number;
}

/** Node checks the two timeouts on a sweep (every 30 s by default): sweep often enough that they hold to about a second. */
const MAX_CHECK_INTERVAL_MS = 1_000;

/** A fastify `serverFactory` building the server these options describe (files are read now: a bad path fails the start). */
export function httpServerFactory(options: HttpServerOptions): FastifyServerFactory {
  const serverOptions: http.ServerOptions = {
    headersTimeout: Math.min(options.headersTimeoutMs, options.requestTimeoutMs),
    requestTimeout: options.requestTimeoutMs,
    connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, Math.ceil(options.headersTimeoutMs / 4)),
  };
  const tls = isTls(options) ? { cert: readFileSync(options.tlsCert!), key: readFileSync(options.tlsKey!) } : null;
  return (handler) => {
    const server = tls ? https.createServer({ ...serverOptions, ...tls }, handler) : http.createServer(serverOptions, handler);
    server.keepAliveTimeout = options.keepAliveTimeoutMs;
    return server as http.Server;
  };
}
