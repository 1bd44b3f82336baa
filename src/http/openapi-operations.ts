import { z } from 'zod';
import { INVOKE_ACTIONS, invokePayloadSchema } from '../protocol/invoke.js';
import { addParamsSchema, idParamsSchema, listParamsSchema, searchParamsSchema, updateBodySchema, userScopeSchema } from '../protocol/memorypool-schemas.js';
import {
  addAnswerSchema,
  deletedSchema,
  deletedUserSchema,
  healthSchema,
  historySchema,
  memorySchema,
  memoryWithHistorySchema,
  poolStatsSchema,
  scoredMemorySchema,
  searchAnswerSchema,
} from '../protocol/response-schemas.js';
import { addRequestSchema, searchRequestSchema } from '../protocol/platform.js';

/**
 * What the OpenAPI document says about each route, keyed as fastify registers it
 * (`METHOD /path/:param`). Request shapes are the zod schemas the routes validate with;
 * test/http/openapi.test.ts checks every registered route has an entry here and every
 * example passes its own schema and its route.
 */
export interface OperationDoc {
  summary: string;
  description?: string;
  tag: 'MemoryPool' | 'Evaluation platform' | 'MCP' | 'Operations';
  /** Answers without a token. */
  public?: boolean;
  /** Path parameters' schema (an object schema). */
  path?: z.ZodObject;
  /** Query parameters' schema (an object schema, possibly with a transform). */
  query?: z.ZodType;
  queryShape?: { omit?: string[]; required?: string[] };
  body?: z.ZodType;
  bodyShape?: { omit?: string[]; required?: string[] };
  /** Named examples of the query (GET) or body; each must pass the schema. */
  examples?: Record<string, Record<string, unknown>>;
  /** The success answer: status, description, schema (JSON) or a media type (pages, metrics). */
  success: { status: number; description: string; schema?: z.ZodType; mediaType?: string };
  /** Error statuses this route documents beyond the ones every protected route has (401, 403). */
  errors?: number[];
}

const idPath = idParamsSchema.pick({ id: true });
const userQuery = idParamsSchema.pick({ user_id: true });
const userPath = z.object({ user_id: z.string().meta({ description: 'The user whose data goes' }) });

const invokeExamples = {
  add: { tool_id: 't1', tool: 'memorypool', invoked_by: 'agent', params: { action: 'add', text: 'Caroline adopted a dog named Max', tags: ['pets'], metadata: { project: 'styx' } } },
  filtered: { tool_id: 't4', tool: 'memorypool', invoked_by: 'agent', params: { action: 'search', query: 'dog', filter: { project: 'styx' }, since: 1700000000000 } },
  search: { tool_id: 't2', tool: 'memorypool', invoked_by: 'agent', params: { action: 'search', query: 'what is the dog called', limit: 3 } },
  stats: { tool_id: 't3', tool: 'memorypool', invoked_by: 'agent', params: { action: 'stats' } },
};

const page = (description: string) => ({ status: 200, description, mediaType: 'text/html' });

export const OPERATIONS: Record<string, OperationDoc> = {
  'GET /health': { summary: 'Liveness and the number of memories held', tag: 'Operations', public: true, success: { status: 200, description: 'Up', schema: healthSchema } },
  'POST /mem': {
    summary: 'Store a memory',
    tag: 'MemoryPool',
    body: addParamsSchema,
    examples: {
      fact: { text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.8 },
      minimal: { text: 'Prefers tea to coffee', user_id: 'alice' },
      metadata: { text: 'The deploy key was rotated', metadata: { project: 'styx', agent: 'ops-bot', priority: 2 } },
    },
    success: { status: 201, description: 'The stored memory', schema: memorySchema },
    errors: [400, 413, 503],
  },
  'GET /mem/search': {
    summary: 'Rank memories for a query',
    description:
      'Filters (`tag`, `meta.<key>=<value>` for each metadata key that must match, `since`, `until`) choose the memories ranked: a filtered search ranks among the matching ones only. Each distinct text is answered once (trimmed, white space collapsed, any case): the best-scored copy, the newest on ties, with `duplicates` when others were folded into it.',
    tag: 'MemoryPool',
    query: searchParamsSchema,
    queryShape: { omit: ['filter'], required: ['q'] },
    examples: {
      question: { q: 'what is the dog called', limit: '3' },
      tagged: { q: 'dog', tag: 'pets', user_id: 'default' },
      explained: { q: 'dog', explain: 'true' },
      filtered: { q: 'deploy key', 'meta.project': 'styx', since: '2024-01-01T00:00:00Z', until: '1893456000000' },
    },
    success: { status: 200, description: 'Memories, best first, each with its score', schema: z.array(scoredMemorySchema) },
    errors: [400],
  },
  'GET /mem/list': {
    summary: 'List memories, newest first',
    description: 'Newest first (an update counts as new). Filters as on /mem/search: `tag`, `meta.<key>=<value>`, `since`, `until`.',
    tag: 'MemoryPool',
    query: listParamsSchema,
    queryShape: { omit: ['filter'] },
    examples: { newest: { limit: '5' }, tagged: { tag: 'pets' }, filtered: { 'meta.project': 'styx', since: '1700000000000' } },
    success: { status: 200, description: 'Memories, newest first', schema: z.array(memorySchema) },
    errors: [400],
  },
  'GET /mem/stats': { summary: 'Pool statistics', tag: 'MemoryPool', query: userScopeSchema, success: { status: 200, description: 'Counts per user (those the token covers)', schema: poolStatsSchema }, errors: [400] },
  'GET /mem/:id': { summary: 'One memory', tag: 'MemoryPool', path: idPath, query: userQuery, success: { status: 200, description: 'The memory', schema: memorySchema }, errors: [400, 404] },
  'PATCH /mem/:id': {
    summary: 'Update a memory in place',
    description:
      'Any of text, tags, importance, metadata (at least one; each replaces the stored one; validated as on POST /mem). Same id, version + 1, updated_at; a new text is re-embedded and re-indexed before the answer. The replaced version stays in the history.',
    tag: 'MemoryPool',
    path: idPath,
    query: userQuery,
    body: updateBodySchema,
    success: { status: 200, description: 'The updated memory', schema: memorySchema },
    errors: [400, 404, 503],
  },
  'GET /mem/:id/history': {
    summary: "A memory's versions",
    description: 'Oldest first, the current one last. Deleting the memory (or its user) deletes its history.',
    tag: 'MemoryPool',
    path: idPath,
    query: userQuery,
    success: { status: 200, description: 'Every version', schema: historySchema },
    errors: [400, 404],
  },
  'DELETE /mem/:id': { summary: 'Delete one memory, its history with it', tag: 'MemoryPool', path: idPath, query: userQuery, success: { status: 200, description: 'Deleted', schema: deletedSchema }, errors: [400, 404, 503] },
  'POST /invoke': {
    summary: 'Run a BIT tool call',
    description: `Routes on \`params.action\` (else \`params.tool\`, else \`tool\`): ${INVOKE_ACTIONS.join(', ')}. Each action takes the parameters of its route above (add: POST /mem's body; search: GET /mem/search's query, \`query\` or \`q\`, metadata conditions as \`filter\` (key → value) or \`meta.<key>\`; update: \`id\` plus PATCH /mem/{id}'s body; history: \`id\`; get: \`id\`, \`history: true\` adds \`versions\`; list, delete, stats likewise) and answers as that route does.`,
    tag: 'MemoryPool',
    body: invokePayloadSchema,
    examples: invokeExamples,
    success: {
      status: 200,
      description: "The action's answer",
      schema: z.union([memorySchema, memoryWithHistorySchema, historySchema, z.array(scoredMemorySchema), z.array(memorySchema), deletedSchema, poolStatsSchema]),
    },
    errors: [400, 404, 503],
  },
  'DELETE /users/:user_id': { summary: "Delete everything stored for a user, index files included", tag: 'MemoryPool', path: userPath, success: { status: 200, description: 'Deleted', schema: deletedUserSchema }, errors: [503] },
  'POST /add': {
    summary: 'Add a conversation (evaluation platform)',
    description: 'Idempotent on (request_id, user_id). Answers once the memories are durable and searchable.',
    tag: 'Evaluation platform',
    body: addRequestSchema,
    examples: {
      conversation: {
        request_id: 'r1',
        user_id: 'conv-1',
        session_id: 's1',
        messages: [{ role: 'Caroline', content: 'I went to a support group yesterday.', timestamp: 1683554160000 }],
      },
    },
    success: { status: 200, description: 'Stored', schema: addAnswerSchema },
    errors: [400, 413, 422, 503],
  },
  'POST /search': {
    summary: 'Search a user (evaluation platform)',
    tag: 'Evaluation platform',
    body: searchRequestSchema,
    examples: { question: { query: 'What did Caroline attend?', user_id: 'conv-1', top_k: 10 } },
    success: { status: 200, description: 'Best first, at most top_k', schema: searchAnswerSchema },
    errors: [400, 422],
  },
  'POST /mcp': {
    summary: 'Model Context Protocol (streamable HTTP, stateless)',
    description: 'One JSON-RPC message or batch per POST (send `Accept: application/json, text/event-stream`). Tools: remember, recall, list_memories, get_memory, update_memory, forget, memory_stats.',
    tag: 'MCP',
    success: { status: 200, description: 'The JSON-RPC answer', schema: z.record(z.string(), z.unknown()) },
    errors: [400],
  },
  'GET /mcp': { summary: 'Not served: no sessions to stream', tag: 'MCP', success: { status: 405, description: 'Always 405' } },
  'DELETE /mcp': { summary: 'Not served: no sessions to end', tag: 'MCP', success: { status: 405, description: 'Always 405' } },
  'GET /metrics': {
    summary: 'Prometheus metrics',
    description: 'Public when MEMORYPOOL_METRICS_PUBLIC=1.',
    tag: 'Operations',
    success: { status: 200, description: 'The Prometheus text format', mediaType: 'text/plain' },
  },
  'GET /openapi.json': { summary: 'This document', tag: 'Operations', public: true, success: { status: 200, description: 'OpenAPI 3.1', schema: z.record(z.string(), z.unknown()) } },
  'GET /': {
    summary: 'Where things are',
    description: 'A browser (Accept: text/html) is redirected to the console at /ui; any other client gets this index.',
    tag: 'Operations',
    public: true,
    success: { status: 200, description: 'Links', schema: z.object({ service: z.literal('memorypool'), console: z.string(), docs: z.string(), openapi: z.string(), health: z.string() }) },
  },
  'GET /ui': { summary: 'The web console (search, browse, add, delete, stats)', tag: 'Operations', public: true, success: page('The console page') },
  'GET /ui/:file': { summary: "The console's script and styles", tag: 'Operations', public: true, path: z.object({ file: z.string() }), success: { status: 200, description: 'A file', mediaType: '*/*' }, errors: [404] },
  'GET /docs': { summary: 'The API reference (Swagger UI, served offline)', tag: 'Operations', public: true, success: page('The reference page') },
  'GET /docs/:file': { summary: "The API reference's scripts and styles", tag: 'Operations', public: true, path: z.object({ file: z.string() }), success: { status: 200, description: 'A file', mediaType: '*/*' }, errors: [404] },
};
