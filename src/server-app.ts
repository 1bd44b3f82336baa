import type { FastifyInstance } from 'fastify';
import { buildApp, type AppOptions } from './http/app.js';
import { registerMcpRoute } from './mcp/http-route.js';

/**
 * The server's app: the HTTP API with MCP's streamable transport mounted at /mcp. The HTTP layer
 * knows nothing of MCP; whoever assembles the server (src/main.ts, and test/helper.ts for tests)
 * mounts it here.
 */
export function buildServerApp(options: Omit<AppOptions, 'mounts'>): Promise<FastifyInstance> {
  return buildApp({ ...options, mounts: [(app) => registerMcpRoute(app, options.service)] });
}
