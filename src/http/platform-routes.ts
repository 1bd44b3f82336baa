import type { FastifyInstance } from 'fastify';
import type { MemoryApi } from '../memory/memory-api.js';
import { OPERATION_TABLE } from '../protocol/operations.js';
import { platformAdd, platformSearch } from '../protocol/platform.js';
import { serveOperation } from './operation-route.js';
import { userCheck } from './request-context.js';
import { MAX_SEARCH_BODY_BYTES } from '../protocol/request-limits.js';

export function registerPlatformRoutes(app: FastifyInstance, service: MemoryApi, topKMax: number): void {
  serveOperation(app, OPERATION_TABLE.platformAdd, (request) => platformAdd(service, request.body, userCheck(request)));

  serveOperation(app, OPERATION_TABLE.platformSearch, (request) => platformSearch(service, request.body, topKMax, userCheck(request)), {
    bodyLimit: Math.min(app.initialConfig.bodyLimit ?? MAX_SEARCH_BODY_BYTES, MAX_SEARCH_BODY_BYTES),
  });
}
