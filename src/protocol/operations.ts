import { z } from 'zod';
import { createError, type ErrorCode } from '../errors.js';
import type { ListPage } from '../memory/list-pages.js';
import type { MemoryApi } from '../memory/memory-api.js';
import type { ScoreExplanation, ScoredMemory, SearchHit } from '../memory/types.js';
import {
  addParamsSchema,
  batchParamsSchema,
  DEFAULT_USER,
  DEFAULT_ENTITIES_LIMIT,
  deleteWhereParamsSchema,
  entitiesParamsSchema,
  getParamsSchema,
  idParamsSchema,
  listParamsSchema,
  searchParamsSchema,
  updateBodySchema,
  updateParamsSchema,
  userScopeSchema,
} from './memorypool-schemas.js';
import { addRequestSchema, searchRequestSchema } from './platform.js';
import { runBatch } from './batch-operations.js';
import { changesPageSchema, changesParamsSchema, webhooksAnswerSchema } from './change-schemas.js';
import {
  addAnswerSchema,
  batchAnswerSchema,
  deletedCountSchema,
  deletedSchema,
  deletedUserSchema,
  entitiesAnswerSchema,
  healthSchema,
  historySchema,
  listPageSchema,
  memorySchema,
  memoryWithHistorySchema,
  poolStatsSchema,
  scoredMemorySchema,
  searchAnswerSchema,
} from './response-schemas.js';

/**
 * Every operation of the service, declared once: its route, request and answer schemas, summary,
 * errors, client method, /invoke action and MCP tool. The OpenAPI document, /invoke's action list
 * and dispatch, the MCP tools and the routes' method and path are built from this table;
 * test/protocol/operations.test.ts checks the hand-written clients' methods against it.
 */

/**
 * Called with each user an operation touches, before it is touched (token scopes). A door that
 * knows the scope as data says so in `prefixes` (the token's user prefixes; null: every user),
 * which lets an operation that filters many users' data run where the function cannot go (a
 * server's service threads, src/threads/).
 */
export type UserCheck = ((userId: string) => void) & { readonly prefixes?: readonly string[] | null };

/** What a door passes to an action: the caller's scope, and the `source` an add gets when it names none. */
export interface CallContext {
  checkUser: UserCheck;
  source: string;
}

/** Shapes a schema's JSON form for a reader: spellings it need not see, fields it must send. */
export interface JsonShape {
  omit?: readonly string[];
  required?: readonly string[];
}

/** The operation in one flat object of params: an /invoke action (named as the operation), the CLI, MCP, the in-process pool. */
export interface ActionSpec<Params extends z.ZodType = z.ZodType> {
  params: Params;
  /** What the action may answer when that differs from the route's answer. */
  answers?: readonly z.ZodType[];
  run(service: MemoryApi, input: unknown, context: CallContext): Promise<unknown>;
}

export interface Operation {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** As fastify registers it (`:name` for a path parameter). */
  path: string;
  tag: 'MemoryPool' | 'Evaluation platform' | 'Operations';
  summary: string;
  description?: string;
  /** Answers without a token. */
  public?: boolean;
  /** The route's request parts, each the schema it is validated with; examples of the query (GET) or body, each passing it. */
  request: { path?: z.ZodObject; query?: z.ZodType; queryShape?: JsonShape; body?: z.ZodType; bodyShape?: JsonShape; examples?: Record<string, Record<string, unknown>> };
  answer: { status: number; description: string; schema: z.ZodType };
  /** What the operation itself may fail with, beyond a missing or out-of-scope token. */
  errors: readonly ErrorCode[];
  /** The method of the TypeScript client and the in-process pool (the Python client's is its snake_case). */
  client: string;
  action?: ActionSpec;
  /** The MCP tool that runs the action, named and described for a model. */
  mcp?: { tool: string; description: string; shape?: JsonShape };
}

/** An action whose `run` gets the output of its own params schema. */
function action<P extends z.ZodType>(params: P, run: (service: MemoryApi, input: z.output<P>, context: CallContext) => Promise<unknown>, answers?: z.ZodType[]): ActionSpec<P> {
  return { params, answers, run: (service, input, context) => run(service, input as z.output<P>, context) };
}

const idPath = idParamsSchema.pick({ id: true });
const userQuery = idParamsSchema.pick({ user_id: true });
const userPath = z.object({ user_id: z.string().meta({ description: 'The user whose data goes' }) });
// The writes that embed and append: what they may fail with besides their input.
const WRITE_FAILURES = ['STORAGE_UNAVAILABLE', 'EMBEDDER_UNAVAILABLE'] as const;

export const OPERATION_TABLE = {
  health: {
    method: 'GET',
    path: '/health',
    tag: 'Operations',
    summary: 'Liveness and the number of memories held',
    public: true,
    request: {},
    answer: { status: 200, description: 'Up', schema: healthSchema },
    errors: [],
    client: 'health',
  },
  add: {
    method: 'POST',
    path: '/mem',
    tag: 'MemoryPool',
    summary: 'Store a memory',
    request: {
      body: addParamsSchema,
      examples: {
        fact: { text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.8 },
        minimal: { text: 'Prefers tea to coffee', user_id: 'alice' },
        metadata: { text: 'The deploy key was rotated', metadata: { project: 'styx', agent: 'ops-bot', priority: 2 } },
      },
    },
    answer: { status: 201, description: 'The stored memory', schema: memorySchema },
    errors: ['INVALID_PARAMETER', 'MALFORMED_JSON', 'BODY_TOO_LARGE', ...WRITE_FAILURES],
    client: 'remember',
    action: action(addParamsSchema, (service, input, { checkUser, source }) => {
      const userId = checkedUser(input.user_id, checkUser);
      return service.addMemory({ userId, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata, source: input.source ?? source, ...scopesOf(input) });
    }),
    mcp: {
      tool: 'remember',
      description:
        'Store a fact about the user for later conversations. Write one self-contained statement ("Caroline adopted a dog named Max in May 2023"), not a transcript. Returns the stored memory with its id.',
      shape: { required: ['text'] },
    },
  },
  search: {
    method: 'GET',
    path: '/mem/search',
    tag: 'MemoryPool',
    summary: 'Rank memories for a query',
    description:
      'Filters (`tag`, `meta.<key>=<value>` for each metadata key that must match, `since`, `until`) choose the memories ranked: a filtered search ranks among the matching ones only. Each distinct text is answered once (trimmed, white space collapsed, any case): the best-scored copy, the newest on ties, with `duplicates` when others were folded into it.',
    request: {
      query: searchParamsSchema,
      queryShape: { omit: ['filter', 'where', 'user_ids'], required: ['q'] },
      examples: {
        question: { q: 'what is the dog called', limit: '3' },
        tagged: { q: 'dog', tag: 'pets', user_id: 'default' },
        explained: { q: 'dog', explain: 'true' },
        filtered: { q: 'deploy key', 'meta.project': 'styx', since: '2024-01-01T00:00:00Z', until: '1893456000000' },
      },
    },
    answer: { status: 200, description: 'Memories, best first, each with its score', schema: z.array(scoredMemorySchema) },
    errors: ['INVALID_PARAMETER'],
    client: 'recall',
    action: action(searchParamsSchema, async (service, input, { checkUser }) => (await searchHits(service, input, checkUser)).map(scoredMemory)),
    mcp: {
      tool: 'recall',
      description:
        'Search the long-term memory with a natural-language query. Returns the best-matching memories, best first, each with its relevance score and a standalone `content` (who said it, and when) you can quote; each distinct text once (`duplicates`: how many copies were folded into it). Narrow it with tag, filter (metadata key → value), since and until (ISO 8601 or Unix ms). Set explain to see how each score was made.',
      shape: { omit: ['q'], required: ['query'] },
    },
  },
  list: {
    method: 'GET',
    path: '/mem/list',
    tag: 'MemoryPool',
    summary: 'List memories, newest first',
    description:
      'Newest first (an update counts as new). Filters as on /mem/search: `tag`, `agent_id`, `run_id`, `meta.<key>=<value>`, `since`, `until`. When more remain, the answer names the next page in a `Link: <...>; rel="next"` header and in `x-next-cursor`; `cursor=` continues.',
    request: {
      query: listParamsSchema,
      queryShape: { omit: ['filter', 'where', 'user_ids'] },
      examples: { newest: { limit: '5' }, tagged: { tag: 'pets' }, filtered: { 'meta.project': 'styx', since: '1700000000000' } },
    },
    answer: { status: 200, description: 'Memories, newest first', schema: z.array(memorySchema) },
    errors: ['INVALID_PARAMETER'],
    client: 'list',
    action: action(listParamsSchema, async (service, input, { checkUser }) => (await listPageOf(service, input, checkUser)).memories),
    mcp: {
      tool: 'list_memories',
      description:
        'List stored memories, newest first (an update counts as new), optionally only those with a tag, matching metadata (filter) or in a time window (since, until). Use it to review what is known; use recall to answer a question.',
    },
  },
  find: {
    method: 'POST',
    path: '/mem/search',
    tag: 'MemoryPool',
    summary: 'Rank memories for a query, filters in a JSON body',
    description:
      'The fields of GET /mem/search as JSON (`filter` for the metadata that must match), plus `where`: a filter expression ANDed with the others. An invalid expression is a 400 naming its place (`where.$or[1].importance: must be a number`).',
    request: {
      body: searchParamsSchema,
      bodyShape: { required: ['query'] },
      examples: {
        scoped: { query: 'deploy key', agent_id: 'ops-bot', limit: 5 },
        across: { query: 'deploy key', user_ids: ['alice', 'team-shared'] },
        expression: { query: 'deploy', where: { $or: [{ 'metadata.project': 'styx' }, { importance: { $gte: 0.8 } }], tags: { $contains: 'ops' } } },
      },
    },
    answer: { status: 200, description: 'Memories, best first, each with its score', schema: z.array(scoredMemorySchema) },
    errors: ['INVALID_PARAMETER', 'MALFORMED_JSON', 'BODY_TOO_LARGE'],
    client: 'find',
  },
  page: {
    method: 'POST',
    path: '/mem/list',
    tag: 'MemoryPool',
    summary: 'A page of memories, newest first, and the cursor of the next',
    description: 'The fields of GET /mem/list as JSON, plus `where` (as on POST /mem/search) and `cursor` (the `next_cursor` of the page before, sent with the same filters).',
    request: {
      body: listParamsSchema,
      examples: { first: { limit: 100, agent_id: 'ops-bot' }, expression: { where: { $not: { tags: { $in: ['draft', 'scratch'] } } }, limit: 50 } },
    },
    answer: { status: 200, description: 'A page', schema: listPageSchema },
    errors: ['INVALID_PARAMETER', 'MALFORMED_JSON', 'BODY_TOO_LARGE'],
    client: 'listPage',
    action: action(listParamsSchema, async (service, input, { checkUser }) => {
      const page = await listPageOf(service, input, checkUser);
      return { memories: page.memories, next_cursor: page.nextCursor };
    }),
    mcp: {
      tool: 'list_page',
      description:
        'List stored memories a page at a time, newest first, with the filters of list_memories plus where; answers {memories, next_cursor}: pass next_cursor back as cursor (with the same filters) for the next page, until it is null.',
    },
  },
  get: {
    method: 'GET',
    path: '/mem/:id',
    tag: 'MemoryPool',
    summary: 'One memory',
    request: { path: idPath, query: userQuery },
    answer: { status: 200, description: 'The memory', schema: memorySchema },
    errors: ['INVALID_PARAMETER', 'NOT_FOUND'],
    client: 'get',
    action: action(
      getParamsSchema,
      async (service, input, { checkUser }) => {
        const userId = checkedUser(input.user_id, checkUser);
        const memory = await service.get(userId, input.id);
        return input.history ? { ...memory, versions: (await service.history(userId, input.id)).versions } : memory;
      },
      [memorySchema, memoryWithHistorySchema],
    ),
    mcp: { tool: 'get_memory', description: 'Fetch one memory by its id; with history, also every version of it, oldest first (`versions`).', shape: { required: ['id'] } },
  },
  update: {
    method: 'PATCH',
    path: '/mem/:id',
    tag: 'MemoryPool',
    summary: 'Update a memory in place',
    description:
      'Any of text, tags, importance, metadata (at least one; each replaces the stored one; validated as on POST /mem). Same id, version + 1, updated_at; a new text is re-embedded and re-indexed before the answer. The replaced version stays in the history.',
    request: { path: idPath, query: userQuery, body: updateBodySchema },
    answer: { status: 200, description: 'The updated memory', schema: memorySchema },
    errors: ['INVALID_PARAMETER', 'MALFORMED_JSON', 'NOT_FOUND', ...WRITE_FAILURES],
    client: 'update',
    action: action(updateParamsSchema, (service, input, { checkUser }) => {
      const userId = checkedUser(input.user_id, checkUser);
      return service.updateMemory({ userId, id: input.id, text: input.text, tags: input.tags, importance: input.importance, metadata: input.metadata, ...scopesOf(input) });
    }),
    mcp: {
      tool: 'update_memory',
      description:
        'Correct a memory in place when a fact changed ("moved to Berlin"): give its id and any of text, tags, importance, metadata (each replaces the stored one). Keeps the id, adds a version; searches find the new text at once, the old one stays in its history.',
      shape: { required: ['id'] },
    },
  },
  history: {
    method: 'GET',
    path: '/mem/:id/history',
    tag: 'MemoryPool',
    summary: "A memory's versions",
    description: 'Oldest first, the current one last. Deleting the memory (or its user) deletes its history.',
    request: { path: idPath, query: userQuery },
    answer: { status: 200, description: 'Every version', schema: historySchema },
    errors: ['INVALID_PARAMETER', 'NOT_FOUND'],
    client: 'history',
    action: action(idParamsSchema, (service, input, { checkUser }) => {
      const userId = checkedUser(input.user_id, checkUser);
      return service.history(userId, input.id);
    }),
  },
  delete: {
    method: 'DELETE',
    path: '/mem/:id',
    tag: 'MemoryPool',
    summary: 'Delete one memory, its history with it',
    request: { path: idPath, query: userQuery },
    answer: { status: 200, description: 'Deleted', schema: deletedSchema },
    errors: ['INVALID_PARAMETER', 'NOT_FOUND', 'STORAGE_UNAVAILABLE'],
    client: 'forget',
    action: action(idParamsSchema, async (service, input, { checkUser }) => {
      const userId = checkedUser(input.user_id, checkUser);
      await service.delete(userId, input.id);
      return { deleted: input.id };
    }),
    mcp: { tool: 'forget', description: 'Delete one memory by its id, for good. Use it when the user asks to forget something or a memory is wrong.', shape: { required: ['id'] } },
  },
  purge: {
    method: 'POST',
    path: '/mem/delete',
    tag: 'MemoryPool',
    summary: 'Delete every memory matching a filter, or count them',
    description:
      '`where` (required, not empty; as on POST /mem/search) and any of the other filters choose the memories of the user that go, their history with them, in one write. With `dry_run: true` the answer counts them and nothing is deleted.',
    request: {
      body: deleteWhereParamsSchema,
      bodyShape: { required: ['where'] },
      examples: { project: { where: { 'metadata.project': 'styx' }, dry_run: true }, run: { where: { run_id: 'run-42' }, agent_id: 'ops-bot' } },
    },
    answer: { status: 200, description: 'How many were (or would be) deleted', schema: deletedCountSchema },
    errors: ['INVALID_PARAMETER', 'MALFORMED_JSON', 'BODY_TOO_LARGE', 'STORAGE_UNAVAILABLE'],
    client: 'forgetWhere',
    action: action(deleteWhereParamsSchema, async (service, input, { checkUser }) => {
      checkUser(input.user_id);
      return { deleted: await service.deleteMatching(input.user_id, input.filter, input.dry_run), dry_run: input.dry_run };
    }),
    mcp: {
      tool: 'forget_matching',
      description:
        'Delete every memory matching a filter ("forget everything about project X"): where (e.g. {"metadata.project": "x"} or {"agent_id": "a"}) plus any of tag, agent_id, run_id, since, until. Set dry_run to see first how many it would delete.',
      shape: { required: ['where'] },
    },
  },
  batch: {
    method: 'POST',
    path: '/mem/batch',
    tag: 'MemoryPool',
    summary: 'Add, update and delete many memories in one write',
    description:
      'Up to 1,000 operations of one user (`user_id`, default "default"), applied in order: `{"op": "add", "text", ...}` with the fields of POST /mem, `{"op": "update", "id", ...}` with those of PATCH /mem/{id}, `{"op": "delete", "id"}`. Each is answered in `results`, in order, with the status its own route would give (201, 200, 400, 404) and the memory, the id deleted or the error. An invalid one refuses only itself; the valid ones are durable together, in one store write, before the answer.',
    request: {
      body: batchParamsSchema,
      examples: {
        mixed: {
          user_id: 'alice',
          operations: [
            { op: 'add', text: 'Prefers tea to coffee', tags: ['drinks'] },
            { op: 'add', text: 'Works on project styx', metadata: { project: 'styx' }, agent_id: 'ops-bot' },
            { op: 'delete', id: 'no-such-id' },
          ],
        },
      },
    },
    answer: { status: 200, description: 'Each operation answered, in order', schema: batchAnswerSchema },
    errors: ['INVALID_PARAMETER', 'MALFORMED_JSON', 'BODY_TOO_LARGE', ...WRITE_FAILURES],
    client: 'batch',
    action: action(batchParamsSchema, (service, input, { checkUser }) => runBatch(service, input, checkedUser(input.user_id, checkUser))),
    mcp: {
      tool: 'write_memories',
      description:
        'Store, correct and delete many memories at once (up to 1,000, applied in order, written together): operations like {"op": "add", "text": "..."}, {"op": "update", "id": "...", "text": "..."}, {"op": "delete", "id": "..."}. Answers each in results, in order, with its status; an invalid one is refused alone.',
      shape: { required: ['operations'] },
    },
  },
  stats: {
    method: 'GET',
    path: '/mem/stats',
    tag: 'MemoryPool',
    summary: 'Pool statistics',
    request: { query: userScopeSchema },
    answer: { status: 200, description: 'Counts per user (those the token covers)', schema: poolStatsSchema },
    errors: ['INVALID_PARAMETER'],
    client: 'stats',
    action: action(userScopeSchema, (service, input, { checkUser }) => {
      if (input.user_id !== undefined) checkUser(input.user_id);
      return poolStats(service, checkUser, input.user_id);
    }),
    mcp: { tool: 'memory_stats', description: 'How much is stored: memories and users in the pool, per user counts, disk use and index state.' },
  },
  entities: {
    method: 'GET',
    path: '/mem/entities',
    tag: 'MemoryPool',
    summary: "The user's entities: who and what its memories mention",
    description:
      'People, titles and names the memories mention (capitalised names and runs of them, quoted titles, the speakers of conversations), each with how many memories mention it and when last, the most mentioned first. Pass one as `entity` to /mem/search or /mem/list for everything about it; matching ignores case and a possessive ("melanie\'s" is Melanie).',
    request: { query: entitiesParamsSchema, examples: { user: { user_id: 'conv-1', limit: '20' } } },
    answer: { status: 200, description: 'The entities, the most mentioned first', schema: entitiesAnswerSchema },
    errors: ['INVALID_PARAMETER'],
    client: 'entities',
    action: action(entitiesParamsSchema, async (service, input, { checkUser }) => ({
      entities: await service.entities(checkedUser(input.user_id, checkUser), input.limit ?? DEFAULT_ENTITIES_LIMIT),
    })),
    mcp: {
      tool: 'list_entities',
      description:
        'Who and what the stored memories mention (people, titles, names), each with how many memories mention it and when last, the most mentioned first. Then recall or list_memories with entity set gives everything about one of them.',
    },
  },
  changes: {
    method: 'GET',
    path: '/mem/changes',
    tag: 'MemoryPool',
    summary: 'The change feed: events after a cursor, in commit order',
    description:
      'Every write is an event (`added`, `updated`, `deleted`, `expired`, `user_deleted`) with a `seq` that grows by one per event across every process and replica, in the feed before the write is acknowledged. Pass `next_cursor` back as `after`; with `wait` (seconds, at most 60) the request is held until an event arrives. Without `user_id` a token sees the events of every user it covers. A cursor older than the retention (MEMORYPOOL_CHANGES_DAYS) answers 410 with `oldest_cursor`.',
    request: { query: changesParamsSchema, examples: { follow: { after: '0', limit: '100', wait: '30' }, oneUser: { user_id: 'alice', after: '42' } } },
    answer: { status: 200, description: 'A page of events and the cursor after it', schema: changesPageSchema },
    errors: ['INVALID_PARAMETER', 'CURSOR_EXPIRED', 'STORAGE_UNAVAILABLE'],
    client: 'changes',
    action: action(changesParamsSchema, (service, input, { checkUser }) => {
      if (input.user_id !== undefined) checkUser(input.user_id);
      return service.changes({ after: input.after, limit: input.limit, waitSeconds: input.wait, userId: input.user_id, allowed: (userId) => allowed(checkUser, userId), prefixes: checkUser.prefixes });
    }),
    mcp: {
      tool: 'list_changes',
      description:
        'What changed in memory after a cursor, in order: memories added, updated, deleted or expired, and users deleted, each with the memory as it now is. Pass next_cursor back as after to go on; wait (seconds, at most 60) holds the call until something changes.',
    },
  },
  webhooks: {
    method: 'GET',
    path: '/mem/webhooks',
    tag: 'Operations',
    summary: "The webhooks' delivery state",
    description:
      'Each hook of MEMORYPOOL_WEBHOOKS_FILE (never its secret) with where its delivery stands: the seq delivered up to, failures in a row, the last error, the next try and the process holding its lease. Needs a token that covers every user (a scoped token answers 403).',
    request: {},
    answer: { status: 200, description: 'The hooks, in the file\'s order', schema: webhooksAnswerSchema },
    errors: ['STORAGE_UNAVAILABLE'],
    client: 'webhooks',
    action: action(z.object({}), async (service, _input, { checkUser }) => {
      requireEveryUser(checkUser, 'The webhooks');
      return { webhooks: await service.webhooks() };
    }),
  },
  deleteUser: {
    method: 'DELETE',
    path: '/users/:user_id',
    tag: 'MemoryPool',
    summary: 'Delete everything stored for a user, index files included',
    request: { path: userPath },
    answer: { status: 200, description: 'Deleted', schema: deletedUserSchema },
    errors: ['STORAGE_UNAVAILABLE'],
    client: 'deleteUser',
  },
  platformAdd: {
    method: 'POST',
    path: '/add',
    tag: 'Evaluation platform',
    summary: 'Add a conversation (evaluation platform)',
    description: 'Idempotent on (request_id, user_id). Answers once the memories are durable and searchable.',
    request: {
      body: addRequestSchema,
      examples: {
        conversation: {
          request_id: 'r1',
          user_id: 'conv-1',
          session_id: 's1',
          messages: [{ role: 'Caroline', content: 'I went to a support group yesterday.', timestamp: 1683554160000 }],
        },
      },
    },
    answer: { status: 200, description: 'Stored', schema: addAnswerSchema },
    errors: ['MALFORMED_JSON', 'BODY_TOO_LARGE', 'VALIDATION_FAILED', ...WRITE_FAILURES],
    client: 'add',
  },
  platformSearch: {
    method: 'POST',
    path: '/search',
    tag: 'Evaluation platform',
    summary: 'Search a user (evaluation platform)',
    request: { body: searchRequestSchema, examples: { question: { query: 'What did Caroline attend?', user_id: 'conv-1', top_k: 10 } } },
    answer: { status: 200, description: 'Best first, at most top_k', schema: searchAnswerSchema },
    errors: ['MALFORMED_JSON', 'VALIDATION_FAILED'],
    client: 'search',
  },
} satisfies Record<string, Operation>;

export type OperationName = keyof typeof OPERATION_TABLE;
/** The table's entries in declaration order, each with its name. */
export const OPERATION_LIST: ReadonlyArray<Operation & { name: OperationName }> = Object.entries(OPERATION_TABLE).map(([name, operation]) => ({
  ...(operation as Operation),
  name: name as OperationName,
}));

/** A MemoryPool search (GET /mem/search, /invoke, the CLI, MCP recall): filtered as asked, each distinct text once. */
export function searchHits(service: MemoryApi, input: z.output<typeof searchParamsSchema>, checkUser: UserCheck): Promise<SearchHit[]> {
  // Every user named is checked before any is read: the 403 names the first the caller may not see.
  input.user_ids.forEach((userId) => checkUser(userId));
  const request = { query: input.query, limit: input.limit, filter: input.filter, explain: input.explain, rerank: input.rerank, collapseDuplicates: true };
  return input.user_ids.length === 1 ? service.search({ ...request, userId: input.user_ids[0] }) : service.searchUsers(input.user_ids, request);
}

/** A page of a MemoryPool list (GET and POST /mem/list, /invoke list and page, MCP): filtered as asked, from the cursor on. */
export function listPageOf(service: MemoryApi, input: z.output<typeof listParamsSchema>, checkUser: UserCheck): Promise<ListPage> {
  input.user_ids.forEach((userId) => checkUser(userId));
  const request = { limit: input.limit, filter: input.filter, cursor: input.cursor };
  return input.user_ids.length === 1 ? service.listPage({ ...request, userId: input.user_ids[0] }) : service.listUsersPage(input.user_ids, request);
}

/** A search hit as the MemoryPool doors answer it: the memory, its score, its folded duplicates and its explanation when asked for. */
export function scoredMemory(hit: SearchHit): ScoredMemory & { explanation?: ScoreExplanation } {
  return {
    ...hit.memory,
    score: hit.score,
    ...(hit.duplicates !== undefined ? { duplicates: hit.duplicates } : {}),
    ...(hit.explanation ? { explanation: hit.explanation } : {}),
  };
}

/** An add's or update's scopes and expiry as the service takes them (null, on an update: remove it). */
export function scopesOf<T extends string | null, E extends number | null>(input: { agent_id?: T; run_id?: T; expires_at?: E; ttl_seconds?: number }): { agentId?: T; runId?: T; expiresAtMs?: E; ttlSeconds?: number } {
  return { agentId: input.agent_id, runId: input.run_id, expiresAtMs: input.expires_at, ttlSeconds: input.ttl_seconds };
}

/** The user a call names (the default one when none), once the caller's scope allows it. */
function checkedUser(userId: string | undefined, checkUser: UserCheck): string {
  const user = userId ?? DEFAULT_USER;
  checkUser(user);
  return user;
}

/** Pool statistics restricted to the users the caller may see (all of them with an unscoped token). */
async function poolStats(service: MemoryApi, checkUser: UserCheck, onlyUser?: string): Promise<unknown> {
  const stats = await service.stats();
  // A token that covers every user sees every entry: no check of 100,000 of them one by one.
  if (onlyUser === undefined && allowed(checkUser, '')) return stats;
  const visible = stats.per_user.filter((entry) => (onlyUser === undefined || entry.user_id === onlyUser) && allowed(checkUser, entry.user_id));
  if (visible.length === stats.per_user.length) return stats;
  return { ...stats, count: visible.reduce((sum, entry) => sum + entry.count, 0), users: visible.length, per_user: visible };
}

/**
 * Refuses a token scoped to some users: what the operation shows concerns every user. A scope
 * covers the empty user id only when one of its prefixes is empty, i.e. when it covers every user.
 */
function requireEveryUser(checkUser: UserCheck, what: string): void {
  if (!allowed(checkUser, '')) throw createError('FORBIDDEN', `${what} concern every user: these credentials are scoped to some users`);
}

function allowed(checkUser: UserCheck, userId: string): boolean {
  try {
    checkUser(userId);
    return true;
  } catch {
    return false;
  }
}
