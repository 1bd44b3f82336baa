import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { createError, errors } from '../errors.js';
import { inputJsonSchema } from '../protocol/json-schema.js';
import { errorBodySchema, validationErrorBodySchema } from '../protocol/response-schemas.js';
import { cursorExpiredBodySchema } from '../protocol/change-schemas.js';
import type { JsonShape } from '../protocol/operations.js';
import { OPERATIONS, type OperationDoc } from './openapi-operations.js';
import { packageVersion } from './package-files.js';

/** A route as fastify registered it. */
export interface RegisteredRoute {
  method: string;
  url: string;
}

/** Records every route registered after this call (call it before any route). */
export function trackRoutes(app: FastifyInstance): RegisteredRoute[] {
  const routes: RegisteredRoute[] = [];
  app.addHook('onRoute', (route) => {
    // HEAD twins of GET routes are fastify's own; the document shows the GET.
    for (const method of [route.method].flat()) if (method !== 'HEAD') routes.push({ method, url: route.url });
  });
  return routes;
}

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid input: `{"detail": {"reason": "..."}}`',
  401: 'Missing or invalid token',
  403: 'The token does not cover this user',
  404: 'Not found',
  405: 'Method not allowed',
  410: 'The cursor is older than the change feed holds: `{"detail": {...}, "oldest_cursor": "..."}`',
  413: 'Body over the limit',
  422: 'The platform\'s validation errors, every problem listed',
  503: 'Unavailable (starting, shutting down, storage or embedder down): retry',
};

/** The OpenAPI 3.1 document of the registered routes, request schemas straight from zod. */
export function buildOpenApiDocument(routes: readonly RegisteredRoute[]): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    // A route missing from OPERATIONS still appears (the test insists it gets an entry).
    const doc = OPERATIONS[`${route.method} ${route.url}`] ?? { summary: 'Undocumented', tag: 'Operations', success: { status: 200, description: 'Undocumented' } };
    const openApiPath = route.url.replace(/:([A-Za-z_]+)/g, '{$1}');
    (paths[openApiPath] ??= {})[route.method.toLowerCase()] = operation(route, doc);
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'memorypool',
      version: packageVersion(),
      description: 'Long-term memory for AI agents: the MemoryPool protocol, the evaluation platform\'s Add/Search contract, MCP, and operations routes.',
    },
    servers: [{ url: '/' }],
    security: [{ bearer: [] }, { apiKey: [] }],
    paths,
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'MEMORYPOOL_TOKEN or a tokens-file token (`Authorization: Token <t>` works too)' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-Api-Key' },
      },
      schemas: { Error: responseJsonSchema(errorBodySchema), ValidationError: responseJsonSchema(validationErrorBodySchema), CursorExpired: responseJsonSchema(cursorExpiredBodySchema) },
    },
  };
}

function operation(route: RegisteredRoute, doc: OperationDoc): Record<string, unknown> {
  const op: Record<string, unknown> = {
    operationId: `${route.method.toLowerCase()}${route.url.replace(/[/:]+([a-z])?/gi, (_m, c: string | undefined) => (c ?? '').toUpperCase())}`,
    summary: doc.summary,
    tags: [doc.tag],
  };
  if (doc.description) op.description = doc.description;
  if (doc.public) op.security = [];
  const parameters = [...parametersOf(doc.path, 'path'), ...parametersOf(doc.query, 'query', doc.queryShape, doc.body === undefined ? doc.examples : undefined)];
  if (parameters.length > 0) op.parameters = parameters;
  if (doc.body) {
    const media: Record<string, unknown> = { schema: inputJsonSchema(doc.body, doc.bodyShape) };
    if (doc.examples) media.examples = Object.fromEntries(Object.entries(doc.examples).map(([name, value]) => [name, { value }]));
    op.requestBody = { required: true, content: { 'application/json': media } };
  }
  const responses: Record<string, unknown> = {};
  const success = doc.success;
  responses[String(success.status)] = {
    description: success.description,
    ...(success.schema ? { content: { 'application/json': { schema: responseJsonSchema(success.schema) } } } : success.mediaType ? { content: { [success.mediaType]: {} } } : {}),
  };
  const errorStatuses = new Set<number>([...(doc.public ? [] : [errors.UNAUTHORIZED.status, errors.FORBIDDEN.status]), ...(doc.errors ?? []).map((code) => errors[code].status)]);
  for (const status of [...errorStatuses].sort()) {
    const schema = status === 422 ? '#/components/schemas/ValidationError' : status === 410 ? '#/components/schemas/CursorExpired' : '#/components/schemas/Error';
    responses[String(status)] = { description: ERROR_TEXT[status], content: { 'application/json': { schema: { $ref: schema } } } };
  }
  op.responses = responses;
  return op;
}

function parametersOf(
  schema: z.ZodType | undefined,
  where: 'path' | 'query',
  shape?: JsonShape,
  examples?: Record<string, Record<string, unknown>>,
): Record<string, unknown>[] {
  if (!schema) return [];
  const json = inputJsonSchema(schema, shape) as { properties?: Record<string, Record<string, unknown>>; required?: string[] };
  const first = examples ? Object.values(examples)[0] : undefined;
  return Object.entries(json.properties ?? {}).map(([name, property]) => {
    const { description, ...rest } = property;
    const parameter: Record<string, unknown> = { name, in: where, required: where === 'path' || (json.required ?? []).includes(name), schema: rest };
    if (description) parameter.description = description;
    if (first && name in first) parameter.example = first[name];
    return parameter;
  });
}

/** An answer's JSON Schema (output side: what the route sends). */
function responseJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', reused: 'inline' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}

const SWAGGER_FILES: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

/** GET /openapi.json and the reference at /docs, Swagger UI from the installed package (no CDN). */
export function registerOpenApi(app: FastifyInstance, routes: readonly RegisteredRoute[]): void {
  let document: Record<string, unknown> | null = null;
  app.get('/openapi.json', async () => (document ??= buildOpenApiDocument(routes)));

  const swaggerDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  app.get('/docs', async (_request, reply) => reply.type('text/html; charset=utf-8').send(DOCS_PAGE));
  app.get('/docs/:file', async (request, reply) => {
    const { file } = request.params as { file: string };
    if (file === 'init.js') return reply.type('text/javascript; charset=utf-8').send(DOCS_INIT);
    const type = SWAGGER_FILES[file];
    if (!type) throw createError('NOT_FOUND', `No file ${JSON.stringify(file)} under /docs`);
    return reply.type(type).header('cache-control', 'public, max-age=86400').send(await readFile(path.join(swaggerDir, file)));
  });
}

const DOCS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>memorypool API reference</title>
<link rel="icon" href="/docs/favicon-32x32.png">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

const DOCS_INIT = `window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true, persistAuthorization: false });
`;
