import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { isAppError } from '../errors.js';
import type { MemoryApi } from '../memory/memory-api.js';
import { runAction, type Action } from '../protocol/invoke.js';
import { packageVersion } from '../http/package-files.js';
import { inputJsonSchema } from '../protocol/json-schema.js';
import { OPERATION_LIST, OPERATION_TABLE, scoredMemory, searchHits, type UserCheck } from '../protocol/operations.js';
import { parseOr400 } from '../protocol/validation.js';
import { withSpan } from '../telemetry/tracing.js';

/**
 * The memory as Model Context Protocol tools: one per operation that declares one
 * (src/protocol/operations.ts), its input schema the action's params schema, so a bad argument
 * gets the message the API gives, and its call the same action.
 */
interface MemoryTool {
  name: string;
  description: string;
  inputSchema: Tool['inputSchema'];
  run(service: MemoryApi, args: Record<string, unknown>, checkUser: UserCheck): Promise<unknown>;
}

/** Where a tool answers more than its action: recall gives each hit's standalone `content`, for the model to quote. */
const TOOL_RUNS: Partial<Record<Action, MemoryTool['run']>> = {
  search: async (service, args, checkUser) =>
    (await searchHits(service, parseOr400(OPERATION_TABLE.search.action.params, args), checkUser)).map((hit) => ({ ...scoredMemory(hit), content: hit.content })),
};

export const MEMORY_TOOLS: readonly MemoryTool[] = OPERATION_LIST.flatMap((operation) => {
  const { mcp, action } = operation;
  if (!mcp || !action) return [];
  const name = operation.name as Action;
  return [
    {
      name: mcp.tool,
      description: mcp.description,
      // Built once: the schemas do not change while the process runs.
      inputSchema: inputJsonSchema(action.params, mcp.shape) as Tool['inputSchema'],
      run: TOOL_RUNS[name] ?? ((service, args, checkUser) => runAction(service, name, args, checkUser, 'mcp')),
    },
  ];
});

const TOOL_LIST: Tool[] = MEMORY_TOOLS.map(({ name, description, inputSchema }) => ({ name, description, inputSchema }));

/**
 * An MCP server over the service. `checkUser` applies the caller's token scope (the HTTP
 * transport) or nothing (stdio: the local user owns the data directory). `pending`, when given,
 * holds each tool call until it has answered, so a transport can wait for them before closing.
 */
export function createMcpServer(service: MemoryApi, checkUser: UserCheck, pending?: Set<Promise<unknown>>): Server {
  const server = new Server({ name: 'memorypool', version: packageVersion() }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOL_LIST }));
  server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = MEMORY_TOOLS.find((candidate) => candidate.name === request.params.name);
    if (!tool) return toolError(`Unknown tool ${JSON.stringify(request.params.name)}: expected one of ${MEMORY_TOOLS.map((t) => t.name).join(', ')}`);
    const call = callTool(tool, service, request.params.arguments ?? {}, checkUser);
    if (pending) {
      pending.add(call);
      void call.finally(() => pending.delete(call));
    }
    return call;
  });
  return server;
}

/** Each call is a span (the MCP semantic conventions' name and attributes), over the operation's. */
function callTool(tool: MemoryTool, service: MemoryApi, args: Record<string, unknown>, checkUser: UserCheck): Promise<CallToolResult> {
  return withSpan(`tools/call ${tool.name}`, { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': tool.name, 'gen_ai.operation.name': 'execute_tool' }, async (span): Promise<CallToolResult> => {
    try {
      const result = await tool.run(service, args, checkUser);
      return { content: [{ type: 'text', text: JSON.stringify(result, null, 2) }] };
    } catch (error) {
      // The service's errors are tool results, so the model reads the message and can act on it
      // (fix an argument, retry after a 503); only an unexpected failure is a protocol error.
      if (isAppError(error)) {
        span.fail(error);
        return toolError(error.message);
      }
      throw error;
    }
  });
}

function toolError(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: message }] };
}
