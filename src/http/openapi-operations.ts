import { z } from 'zod';
import type { ErrorCode } from '../errors.js';
import { INVOKE_ACTIONS, invokePayloadSchema } from '../protocol/invoke.js';
import type { JsonShape, Operation } from '../protocol/operations.js';
import { OPERATION_LIST } from '../protocol/operations.js';

/**
 * What the OpenAPI document says about each route, keyed as fastify registers it
 * (`METHOD /path/:param`): the operations of src/protocol/operations.ts, plus the routes that are
 * doors or pages rather than operations (/invoke, /mcp, metrics, the console, the reference).
 * test/http/openapi.test.ts checks every registered route has an entry here and every example
 * passes its own schema and its route.
 */
export interface OperationDoc {
  summary: string;
  description?: string;
  tag: Operation['tag'] | 'MCP';
  /** Answers without a token. */
  public?: boolean;
  /** Path parameters' schema (an object schema). */
  path?: z.ZodObject;
  /** Query parameters' schema (an object schema, possibly with a transform). */
  query?: z.ZodType;
  queryShape?: JsonShape;
  body?: z.ZodType;
  bodyShape?: JsonShape;
  /** Named examples of the query (GET) or body; each must pass the schema. */
  examples?: Record<string, Record<string, unknown>>;
  /** The success answer: status, description, schema (JSON) or a media type (pages, metrics). */
  success: { status: number; description: string; schema?: z.ZodType; mediaType?: string };
  /** What the route may fail with beyond what every protected route may (401, 403). */
  errors?: readonly ErrorCode[];
}

interface RouteDoc extends OperationDoc {
  method: string;
  url: string;
}

const actions = OPERATION_LIST.filter((operation) => operation.action !== undefined);

/** Each distinct schema once, in the order first met. */
const distinct = (schemas: z.ZodType[]) => [...new Set(schemas)];

const invokeExamples = {
  add: { tool_id: 't1', tool: 'memorypool', invoked_by: 'agent', params: { action: 'add', text: 'Caroline adopted a dog named Max', tags: ['pets'], metadata: { project: 'styx' } } },
  filtered: { tool_id: 't4', tool: 'memorypool', invoked_by: 'agent', params: { action: 'search', query: 'dog', filter: { project: 'styx' }, since: 1700000000000 } },
  search: { tool_id: 't2', tool: 'memorypool', invoked_by: 'agent', params: { action: 'search', query: 'what is the dog called', limit: 3 } },
  stats: { tool_id: 't3', tool: 'memorypool', invoked_by: 'agent', params: { action: 'stats' } },
};

const page = (description: string) => ({ status: 200, description, mediaType: 'text/html' });

function operationDoc(operation: Operation): RouteDoc {
  const { request } = operation;
  return {
    method: operation.method,
    url: operation.path,
    summary: operation.summary,
    description: operation.description,
    tag: operation.tag,
    public: operation.public,
    path: request.path,
    query: request.query,
    queryShape: request.queryShape,
    body: request.body,
    bodyShape: request.bodyShape,
    examples: request.examples,
    success: operation.answer,
    errors: operation.errors,
  };
}

const ROUTE_DOCS: RouteDoc[] = [
  ...OPERATION_LIST.map(operationDoc),
  {
    method: 'POST',
    url: '/invoke',
    summary: 'Run a BIT tool call',
    description: `Routes on \`params.action\` (else \`params.tool\`, else \`tool\`): ${INVOKE_ACTIONS.join(', ')}. Each action takes the parameters of its route above (add: POST /mem's body; search: GET /mem/search's query, \`query\` or \`q\`, metadata conditions as \`filter\` (key → value) or \`meta.<key>\`; update: \`id\` plus PATCH /mem/{id}'s body; history: \`id\`; get: \`id\`, \`history: true\` adds \`versions\`; list, delete, stats likewise) and answers as that route does.`,
    tag: 'MemoryPool',
    body: invokePayloadSchema,
    examples: invokeExamples,
    success: {
      status: 200,
      description: "The action's answer",
      schema: z.union(distinct(actions.flatMap((operation) => [...(operation.action!.answers ?? [operation.answer.schema])]))),
    },
    errors: [...new Set<ErrorCode>(['UNKNOWN_ACTION', ...actions.flatMap((operation) => operation.errors)])],
  },
  {
    method: 'POST',
    url: '/mcp',
    summary: 'Model Context Protocol (streamable HTTP, stateless)',
    description: `One JSON-RPC message or batch per POST (send \`Accept: application/json, text/event-stream\`). Tools: ${OPERATION_LIST.flatMap((operation) => operation.mcp?.tool ?? []).join(', ')}.`,
    tag: 'MCP',
    success: { status: 200, description: 'The JSON-RPC answer', schema: z.record(z.string(), z.unknown()) },
    errors: ['INVALID_PARAMETER'],
  },
  { method: 'GET', url: '/mcp', summary: 'Not served: no sessions to stream', tag: 'MCP', success: { status: 405, description: 'Always 405' } },
  { method: 'DELETE', url: '/mcp', summary: 'Not served: no sessions to end', tag: 'MCP', success: { status: 405, description: 'Always 405' } },
  {
    method: 'GET',
    url: '/metrics',
    summary: 'Prometheus metrics',
    description: 'Public when MEMORYPOOL_METRICS_PUBLIC=1.',
    tag: 'Operations',
    success: { status: 200, description: 'The Prometheus text format', mediaType: 'text/plain' },
  },
  { method: 'GET', url: '/openapi.json', summary: 'This document', tag: 'Operations', public: true, success: { status: 200, description: 'OpenAPI 3.1', schema: z.record(z.string(), z.unknown()) } },
  {
    method: 'GET',
    url: '/',
    summary: 'Where things are',
    description: 'A browser (Accept: text/html) is redirected to the console at /ui; any other client gets this index.',
    tag: 'Operations',
    public: true,
    success: { status: 200, description: 'Links', schema: z.object({ service: z.literal('memorypool'), console: z.string(), docs: z.string(), openapi: z.string(), health: z.string() }) },
  },
  { method: 'GET', url: '/ui', summary: 'The web console (search, browse, add, delete, stats)', tag: 'Operations', public: true, success: page('The console page') },
  { method: 'GET', url: '/ui/:file', summary: "The console's script and styles", tag: 'Operations', public: true, path: z.object({ file: z.string() }), success: { status: 200, description: 'A file', mediaType: '*/*' }, errors: ['NOT_FOUND'] },
  { method: 'GET', url: '/docs', summary: 'The API reference (Swagger UI, served offline)', tag: 'Operations', public: true, success: page('The reference page') },
  { method: 'GET', url: '/docs/:file', summary: "The API reference's scripts and styles", tag: 'Operations', public: true, path: z.object({ file: z.string() }), success: { status: 200, description: 'A file', mediaType: '*/*' }, errors: ['NOT_FOUND'] },
];

/** The documented routes by `METHOD /path`, the key fastify's route list gives. */
export const OPERATIONS: Record<string, OperationDoc> = Object.fromEntries(ROUTE_DOCS.map(({ method, url, ...doc }) => [`${method} ${url}`, doc]));
