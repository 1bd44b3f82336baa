import type { MemoryService } from './memory-service.js';

/**
 * The MemoryService members the doors call, named once: MemoryApi below is read from it, and so is
 * a service thread's allow-list of what its port may call (src/threads/service-thread.ts).
 */
export const DOOR_METHODS = [
  'addMemory',
  'addConversation',
  'search',
  'searchUsers',
  'list',
  'listPage',
  'listUsersPage',
  'get',
  'updateMemory',
  'entities',
  'history',
  'delete',
  'deleteUser',
  'batch',
  'deleteMatching',
  'exportRecords',
  'exportUnits',
  'importRecords',
  'changes',
  'webhooks',
  'stats',
  'memoryCount',
  'healthCount',
  'userCount',
  'embedder',
] as const satisfies readonly (keyof MemoryService)[];

/**
 * What the doors call (HTTP, /invoke, MCP, the operation table's actions): the MemoryService's
 * public operations, and nothing of its insides, so that a server may answer them from a
 * service on this thread or from the services on its threads (src/threads/service-threads.ts).
 */
export type MemoryApi = Pick<MemoryService, (typeof DOOR_METHODS)[number]> & {
  /** Users held whose HNSW index is still being read or rebuilt (a gauge of /metrics). */
  indexesInProgress(): number | Promise<number>;
};
