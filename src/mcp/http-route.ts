import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { createError } from '../errors.js';
import type { MemoryApi } from '../memory/memory-api.js';
import { userCheck } from '../http/request-context.js';

/**
 * The MCP SDK and its tools, imported at the first /mcp request: they are a third of the
 * modules a start imports (~0.3 s of a cold start here), and most deployments never use MCP.
 */
let mcpModules: Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('./memory-tools.js')]> | null = null;
function loadMcp() {
  mcpModules ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('./memory-tools.js')]);
  return mcpModules;
}

/**
 * MCP's streamable HTTP transport at /mcp, stateless: every POST carries one JSON-RPC message
 * (or batch) and gets its answer as JSON, so no session outlives its request and a restart
 * loses nothing. The app's hooks ran first: the token was checked like on every other route,
 * and its scope applies to each tool call. GET (a server-to-client stream) and DELETE (ending
 * a session) have nothing to serve without sessions: 405, as the transport's spec allows.
 */
export function registerMcpRoute(app: FastifyInstance, service: MemoryApi): void {
  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await loadMcp();
    const server = createMcpServer(service, userCheck(request));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.once('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(request.raw, reply.raw, request.body);
  };
  app.post('/mcp', handler);
  const noSessions = async (_request: FastifyRequest, reply: FastifyReply): Promise<never> => {
    reply.header('allow', 'POST');
    throw createError('METHOD_NOT_ALLOWED', 'MCP at /mcp is stateless: POST each JSON-RPC message; there is no stream to open or session to end');
  };
  app.get('/mcp', noSessions);
  app.delete('/mcp', noSessions);
}
