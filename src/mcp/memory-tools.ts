import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { isAppError } from '../errors.js';
import type { MemoryService } from '../memory/memory-service.js';
import { runAction, scoredMemory, searchHits, type Action, type UserCheck } from '../protocol/invoke.js';
import { packageVersion } from '../http/package-files.js';
import { addParamsSchema, getParamsSchema, idParamsSchema, listParamsSchema, searchParamsSchema, updateParamsSchema, userScopeSchema } from '../protocol/memorypool-schemas.js';
import { inputJsonSchema } from '../protocol/json-schema.js';

/**
 * The memory as Model Context Protocol tools. Each tool validates with the same schema as its
 * HTTP route (so a bad argument gets the message the API gives) and calls the same service.
 */
interface MemoryTool {
  name: string;
  description: string;
  schema: z.ZodType;
  /** Shapes the schema's JSON form for a model: spellings it need not see, fields it must send. */
  shape?: { omit?: string[]; required?: string[] };
  run(service: MemoryService, args: Record<string, unknown>, checkUser: UserCheck): Promise<unknown>;
}

const viaAction =
  (action: Action) =>
  (service: MemoryService, args: Record<string, unknown>, checkUser: UserCheck): Promise<unknown> =>
    runAction(service, action, args, checkUser, 'mcp');

export const MEMORY_TOOLS: readonly MemoryTool[] = [
  {
    name: 'remember',
    description:
      'Store a fact about the user for later conversations. Write one self-contained statement ("Caroline adopted a dog named Max in May 2023"), not a transcript. Returns the stored memory with its id.',
    schema: addParamsSchema,
    shape: { required: ['text'] },
    run: viaAction('add'),
  },
  {
    name: 'recall',
    description:
      'Search the long-term memory with a natural-language query. Returns the best-matching memories, best first, each with its relevance score and a standalone `content` (who said it, and when) you can quote; each distinct text once (`duplicates`: how many copies were folded into it). Narrow it with tag, filter (metadata key → value), since and until (ISO 8601 or Unix ms). Set explain to see how each score was made.',
    schema: searchParamsSchema,
    shape: { omit: ['q'], required: ['query'] },
    run: async (service, args, checkUser) => (await searchHits(service, args, checkUser)).map((hit) => ({ ...scoredMemory(hit), content: hit.content })),
  },
  {
    name: 'list_memories',
    description: 'List stored memories, newest first (an update counts as new), optionally only those with a tag, matching metadata (filter) or in a time window (since, until). Use it to review what is known; use recall to answer a question.',
    schema: listParamsSchema,
    run: viaAction('list'),
  },
  {
    name: 'get_memory',
    description: 'Fetch one memory by its id; with history, also every version of it, oldest first (`versions`).',
    schema: getParamsSchema,
    shape: { required: ['id'] },
    run: viaAction('get'),
  },
  {
    name: 'update_memory',
    description:
      'Correct a memory in place when a fact changed ("moved to Berlin"): give its id and any of text, tags, importance, metadata (each replaces the stored one). Keeps the id, adds a version; searches find the new text at once, the old one stays in its history.',
    schema: updateParamsSchema,
    shape: { required: ['id'] },
    run: viaAction('update'),
  },
  {
    name: 'forget',
    description: 'Delete one memory by its id, for good. Use it when the user asks to forget something or a memory is wrong.',
    schema: idParamsSchema,
    shape: { required: ['id'] },
    run: viaAction('delete'),
  },
  {
    name: 'memory_stats',
    description: 'How much is stored: memories and users in the pool, per user counts, disk use and index state.',
    schema: userScopeSchema,
    run: viaAction('stats'),
  },
];

/** A tool list for `tools/list`, built once: the schemas do not change while the process runs. */
const TOOL_LIST: Tool[] = MEMORY_TOOLS.map((tool) => ({
  name: tool.name,
  description: tool.description,
  inputSchema: inputJsonSchema(tool.schema, tool.shape) as Tool['inputSchema'],
}));

/**
 * An MCP server over the service. `checkUser` applies the caller's token scope (the HTTP
 * transport) or nothing (stdio: the local user owns the data directory). `pending`, when given,
 * holds each tool call until it has answered, so a transport can wait for them before closing.
 */
export function createMcpServer(service: MemoryService, checkUser: UserCheck, pending?: Set<Promise<unknown>>): Server {
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

async function callTool(tool: MemoryTool, service: MemoryService, args: Record<string, unknown>, checkUser: UserCheck): Promise<CallToolResult> {
  try {
    const result = await tool.run(service, args, checkUser);
    return { content: [{ type: 'text', text: JSON.stringify(result, null, 2) }] };
  } catch (error) {
    // The service's errors are tool results, so the model reads the message and can act on it
    // (fix an argument, retry after a 503); only an unexpected failure is a protocol error.
    if (isAppError(error)) return toolError(error.message);
    throw error;
  }
}

function toolError(message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: message }] };
}
