import { z } from 'zod';
import { MAX_MESSAGE_CHARS } from './request-limits.js';
import type { MemoryFilter } from '../domain/memory.js';
import { MAX_SCOPE_CHARS } from '../domain/scope.js';
import { isEmptyWhere, parseWhere } from './where-expression.js';
import { parseInstant } from './instant.js';

/**
 * The MemoryPool protocol's request shapes, shared by the HTTP routes, /invoke and the CLI's
 * BIT payloads, so every door accepts and rejects exactly the same input.
 */

export const DEFAULT_USER = 'default';
export const DEFAULT_SEARCH_LIMIT = 10;
export const DEFAULT_LIST_LIMIT = 20;
export const DEFAULT_ENTITIES_LIMIT = 100;
/** An entity as the `entity` filter takes it, in characters. */
export const MAX_ENTITY_CHARS = 200;
export const MAX_LIMIT = 1000;
/** A memory's text, in characters: the platform's per-message bound, for the same reason. */
export const MAX_TEXT_CHARS = MAX_MESSAGE_CHARS;
export const MAX_METADATA_KEYS = 64;
export const MAX_METADATA_KEY_CHARS = 128;
export const MAX_METADATA_VALUE_CHARS = 1000;
/** `meta.<key>=<value>` in a query string: one metadata condition. */
export const META_PARAM_PREFIX = 'meta.';

const nonBlank = (field: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? `${field} is required` : `${field} must be a string`) })
    .refine((value) => value.trim() !== '', { error: `${field} must not be empty` });

// The `.meta()` descriptions are what OpenAPI and the MCP tools show; they never change validation.
const userId = nonBlank('user_id').optional().meta({ description: 'Whose memories (default "default")' });

/** The most users one search or list may read at once. */
export const MAX_READ_USERS = 16;

/** A read's users: `user_id` once, repeated in a query string (an array), and `user_ids` in a body. */
const readUserId = z
  .union([z.string(), z.array(z.string())], { error: 'user_id must be a string (repeat it for several users)' })
  .optional()
  .meta({ description: `Whose memories (default "default"); repeat it in a query string for up to ${MAX_READ_USERS} users` });
const readUserIds = z
  .array(z.string({ error: 'user_ids must be an array of strings' }), { error: 'user_ids must be an array of strings' })
  .optional()
  .meta({ description: `Several users at once (up to ${MAX_READ_USERS}, with user_id if given too): each ranked as alone, then merged; each answer carries its user_id` });

/** The users a read names, each once in the order given (the default user when none), or NEVER after an issue. */
function readUsers(value: { user_id?: string | string[]; user_ids?: string[] }, ctx: z.RefinementCtx): string[] | typeof z.NEVER {
  const named = [...(value.user_id === undefined ? [] : [value.user_id].flat()), ...(value.user_ids ?? [])];
  if (named.some((user) => user.trim() === '')) {
    ctx.addIssue({ code: 'custom', path: [value.user_ids?.some((user) => user.trim() === '') ? 'user_ids' : 'user_id'], message: 'user_id must not be empty' });
    return z.NEVER;
  }
  const users = [...new Set(named)];
  if (users.length > MAX_READ_USERS) {
    ctx.addIssue({ code: 'custom', path: ['user_ids'], message: `at most ${MAX_READ_USERS} users at once` });
    return z.NEVER;
  }
  return users.length > 0 ? users : [DEFAULT_USER];
}

/** A positive integer, from JSON or from a query string ("10"); clamped to MAX_LIMIT. */
const limit = z
  .union([z.number(), z.string().regex(/^\s*\d+\s*$/).transform(Number)], { error: 'limit must be a positive integer' })
  .refine((value) => Number.isInteger(value) && value > 0, { error: 'limit must be a positive integer' })
  .transform((value) => Math.min(value, MAX_LIMIT))
  .optional()
  .meta({ description: `How many, a positive integer (capped at ${MAX_LIMIT})` });

const tag = nonBlank('tag').optional().meta({ description: 'Only memories carrying this tag' });

const metadataValue = z.union([z.string().max(MAX_METADATA_VALUE_CHARS), z.number(), z.boolean()], {
  error: `metadata values must be strings (at most ${MAX_METADATA_VALUE_CHARS} characters), finite numbers or booleans`,
});
const metadataKey = z.string().min(1).max(MAX_METADATA_KEY_CHARS);
const keyOrObjectError = (what: string) => (issue: { code: string }) =>
  issue.code === 'invalid_key' ? `${what} keys must be 1-${MAX_METADATA_KEY_CHARS} characters` : `${what} must be an object`;

/** A memory's metadata: a bounded object of scalar values, so that every door can filter on it. */
const metadata = z
  .record(metadataKey, metadataValue, { error: keyOrObjectError('metadata') })
  .refine((value) => Object.keys(value).length <= MAX_METADATA_KEYS, { error: `metadata may hold at most ${MAX_METADATA_KEYS} keys` })
  .optional()
  .meta({ description: `Your own fields: at most ${MAX_METADATA_KEYS} keys (1-${MAX_METADATA_KEY_CHARS} characters), values strings, numbers or booleans; filter on them with meta.<key>` });

/** A point in time as ISO 8601 text or Unix milliseconds (a number, or digits in a query string). */
const instant = (field: string) =>
  z
    .union([z.number(), z.string()], { error: `${field} must be an ISO 8601 date or Unix milliseconds` })
    .transform((value, ctx) => {
      const ms = parseInstant(value);
      if (ms === null) {
        ctx.addIssue({ code: 'custom', message: `${field} must be an ISO 8601 date or Unix milliseconds` });
        return z.NEVER;
      }
      return ms;
    })
    .optional()
    .meta({ description: `${field === 'since' ? 'From' : 'Up to'} this time, included (ISO 8601 or Unix milliseconds), on the memory's time: occurred_at, else created_at` });

/** When a memory expires: ISO 8601 or Unix milliseconds, as Unix ms. */
const expiresAt = z
  .union([z.number(), z.string()], { error: 'expires_at must be an ISO 8601 date or Unix milliseconds' })
  .transform((value, ctx) => {
    const ms = parseInstant(value);
    if (ms === null) {
      ctx.addIssue({ code: 'custom', message: 'expires_at must be an ISO 8601 date or Unix milliseconds' });
      return z.NEVER;
    }
    return ms;
  });
const ttlSeconds = z
  .number({ error: 'ttl_seconds must be a positive number of seconds' })
  .positive({ error: 'ttl_seconds must be a positive number of seconds' })
  .max(1e11, { error: 'ttl_seconds must be a positive number of seconds' })
  .optional()
  .meta({ description: 'Expire this many seconds from now (instead of expires_at)' });
const oneExpiry = (value: { expires_at?: unknown; ttl_seconds?: unknown }) => value.expires_at === undefined || value.ttl_seconds === undefined;
const ONE_EXPIRY = { error: 'give expires_at or ttl_seconds, not both', path: ['ttl_seconds'] };

/** A scope beside the user (src/domain/scope.ts): `agent_id` or `run_id`, 1-256 characters. */
const scopeId = (field: string) =>
  nonBlank(field).max(MAX_SCOPE_CHARS, { error: `${field} must be at most ${MAX_SCOPE_CHARS} characters` });

/** The fields every door filters with (search, list); `meta.<key>` query parameters join `filter`. */
const filterFields = {
  tag,
  agent_id: scopeId('agent_id').optional().meta({ description: 'Only memories of this agent' }),
  run_id: scopeId('run_id').optional().meta({ description: 'Only memories of this run' }),
  // Read in toFilter (src/protocol/where-expression.ts), so that its message names the place inside it.
  where: z.unknown().optional().meta({
    type: 'object',
    description: 'A filter expression, ANDed with the other filters: $and, $or, $not; {field: value} or {field: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin|$exists|$contains: ...}} on agent_id, run_id, source, tags, importance, created_at, updated_at, occurred_at, expires_at, metadata.<key>',
  }),
  filter: z
    .record(metadataKey, metadataValue, { error: keyOrObjectError('filter') })
    .optional()
    .meta({ description: 'Metadata that must match exactly, key → value (several keys: all of them); in a query string, meta.<key>=<value>' }),
  since: instant('since'),
  until: instant('until'),
  entity: nonBlank('entity')
    .max(MAX_ENTITY_CHARS, { error: `entity must be at most ${MAX_ENTITY_CHARS} characters` })
    .optional()
    .meta({ description: 'Only memories mentioning this entity (a name GET /mem/entities lists; any case, a possessive ignored)' }),
};

type FilterInput = { tag?: string; entity?: string; filter?: Record<string, string | number | boolean>; since?: number; until?: number; agent_id?: string; run_id?: string; where?: unknown } & Record<string, unknown>;

/** The filter of a search or list, `meta.<key>` parameters included; undefined when nothing is asked. */
function toFilter(value: FilterInput, ctx: z.RefinementCtx): MemoryFilter | undefined | typeof z.NEVER {
  const wanted: Record<string, string | number | boolean> = { ...value.filter };
  for (const [name, given] of Object.entries(value)) {
    if (!name.startsWith(META_PARAM_PREFIX)) continue;
    const key = name.slice(META_PARAM_PREFIX.length);
    if (!metadataKey.safeParse(key).success || !metadataValue.safeParse(given).success) {
      ctx.addIssue({ code: 'custom', path: [name], message: `must be given once, with a key of 1-${MAX_METADATA_KEY_CHARS} characters and a value` });
      return z.NEVER;
    }
    wanted[key] = given as string | number | boolean;
  }
  if (value.since !== undefined && value.until !== undefined && value.since > value.until) {
    ctx.addIssue({ code: 'custom', path: ['since'], message: 'since must not be after until' });
    return z.NEVER;
  }
  const filter: MemoryFilter = {};
  if (value.where !== undefined) {
    const where = parseWhere(value.where);
    if (!where.ok) {
      ctx.addIssue({ code: 'custom', path: ['where'], message: where.message, params: { place: where.place } });
      return z.NEVER;
    }
    filter.where = where.node;
  }
  if (value.agent_id !== undefined) filter.agentId = value.agent_id;
  if (value.run_id !== undefined) filter.runId = value.run_id;
  if (value.tag !== undefined) filter.tag = value.tag;
  if (value.entity !== undefined) filter.entity = value.entity;
  if (Object.keys(wanted).length > 0) filter.metadata = wanted;
  if (value.since !== undefined) filter.sinceMs = value.since;
  if (value.until !== undefined) filter.untilMs = value.until;
  return Object.keys(filter).length > 0 ? filter : undefined;
}

/** `explain=true` in a query string, `"explain": true` in JSON: each hit then carries its score's terms. */
const explain = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0'])], { error: 'explain must be true or false' })
  .transform((value) => value === true || value === 'true' || value === '1')
  .optional()
  .meta({ description: "Break each hit's score into the terms that made it (dense, BM25, boosts, multipliers)" });

/** `rerank=false` in a query string, `"rerank": false` in JSON: the fused ranking alone, even with a reranker configured. */
const rerank = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0'])], { error: 'rerank must be true or false' })
  .transform((value) => value === true || value === 'true' || value === '1')
  .optional()
  .meta({ description: 'false: answer the fused ranking alone, without the reranker the server may have (MEMORYPOOL_RERANKER_DIR); default true' });

const text = nonBlank('text').max(MAX_TEXT_CHARS, { error: `text must be at most ${MAX_TEXT_CHARS} characters` });
const tags = z
  .array(z.string({ error: 'tags must be an array of strings' }), { error: 'tags must be an array of strings' })
  .max(256)
  .optional()
  .meta({ description: 'Labels to filter by later' });
const importance = z
  .number({ error: 'importance must be a number between 0 and 1' })
  .min(0, { error: 'importance must be between 0 and 1' })
  .max(1, { error: 'importance must be between 0 and 1' })
  .optional()
  .meta({ description: 'From 0 to 1 (default 0.5); weighs the memory in search' });

export const addParamsSchema = z.object({
  text: text.meta({ description: 'What to remember, one self-contained statement' }),
  tags,
  importance,
  metadata,
  source: nonBlank('source').optional().meta({ description: 'Where it came from' }),
  agent_id: scopeId('agent_id').optional().meta({ description: 'The agent it belongs to (a scope beside the user)' }),
  run_id: scopeId('run_id').optional().meta({ description: 'The run (session, task) it belongs to' }),
  expires_at: expiresAt.optional().meta({ description: 'From then on (ISO 8601 or Unix ms) it is invisible on every door, then deleted for good' }),
  ttl_seconds: ttlSeconds,
  user_id: userId,
});
// No refinement on addParamsSchema (the integrations pick from it, which zod refuses then): an add naming both expiries is refused by the service (write-drafts.ts, expiryOf) with the same message.

/** What an update may change: the fields of an add, each optional, at least one given. */
const updateFields = {
  text: text.optional().meta({ description: 'The corrected text (re-embedded and re-indexed before the answer)' }),
  tags: tags.meta({ description: 'Replace the tags' }),
  importance,
  metadata: metadata.meta({ description: 'Replace the metadata (same rules as on add; {} clears it)' }),
  agent_id: scopeId('agent_id').nullable().optional().meta({ description: 'Move it to this agent (null: to none)' }),
  run_id: scopeId('run_id').nullable().optional().meta({ description: 'Move it to this run (null: to none)' }),
  expires_at: expiresAt.nullable().optional().meta({ description: 'A new expiry (ISO 8601 or Unix ms); null: never' }),
  ttl_seconds: ttlSeconds,
  user_id: userId,
};
const UPDATE_FIELDS = ['text', 'tags', 'importance', 'metadata', 'agent_id', 'run_id', 'expires_at', 'ttl_seconds'] as const;
const someUpdate = {
  error: `give at least one of ${UPDATE_FIELDS.join(', ')}`,
};
const hasUpdate = (value: Record<string, unknown>) => UPDATE_FIELDS.some((field) => value[field] !== undefined);

/** PATCH /mem/{id}'s body (the id is in the path). */
export const updateBodySchema = z.object(updateFields).refine(hasUpdate, someUpdate).refine(oneExpiry, ONE_EXPIRY);
/** /invoke update, the CLI and MCP update_memory: the id plus the fields. */
export const updateParamsSchema = z.object({ id: nonBlank('id').meta({ description: "The memory's id" }), ...updateFields }).refine(hasUpdate, someUpdate).refine(oneExpiry, ONE_EXPIRY);

export const searchParamsSchema = z
  .object({
    // Checked below rather than typed here, so both spellings get the same messages.
    query: z.unknown().optional().meta({ type: 'string', description: 'What to look for, in natural language' }),
    q: z.unknown().optional().meta({ type: 'string', description: 'Same as query' }),
    ...filterFields,
    limit,
    explain,
    rerank,
    user_id: readUserId,
    user_ids: readUserIds,
  })
  .loose()
  .transform((value, ctx) => {
    const query = value.query ?? value.q;
    if (typeof query !== 'string' || query.trim() === '') {
      ctx.addIssue({ code: 'custom', path: ['query'], message: query === undefined ? 'is required' : 'must be a non-empty string' });
      return z.NEVER;
    }
    const filter = toFilter(value, ctx);
    const users = readUsers(value, ctx);
    return { query, filter, limit: value.limit ?? DEFAULT_SEARCH_LIMIT, explain: value.explain ?? false, rerank: value.rerank ?? true, user_ids: users };
  });

export const listParamsSchema = z
  .object({
    ...filterFields,
    limit,
    cursor: z.string({ error: 'cursor must be a string' }).optional().meta({ description: "Continue after the page this came with (a page's next_cursor, or its x-next-cursor header)" }),
    user_id: readUserId,
    user_ids: readUserIds,
  })
  .loose()
  .transform((value, ctx) => ({ filter: toFilter(value, ctx), limit: value.limit ?? DEFAULT_LIST_LIMIT, cursor: value.cursor, user_ids: readUsers(value, ctx) }));

/** POST /mem/delete: a `where` that says something (the other filters may narrow it), whose user, and whether only to count. */
export const deleteWhereParamsSchema = z
  .object({
    ...filterFields,
    where: filterFields.where.meta({ type: 'object', description: 'Which memories go: a filter expression as on POST /mem/search (required, not empty)' }),
    dry_run: z.boolean({ error: 'dry_run must be true or false' }).optional().meta({ description: 'Only count what would be deleted' }),
    user_id: userId,
  })
  .loose()
  .transform((value, ctx) => {
    if (value.where === undefined || (typeof value.where === 'object' && value.where !== null && !Array.isArray(value.where) && Object.keys(value.where).length === 0)) {
      ctx.addIssue({ code: 'custom', path: ['where'], message: value.where === undefined ? 'is required' : 'must hold at least one condition' });
      return z.NEVER;
    }
    const filter = toFilter(value, ctx);
    if (filter === undefined || (filter.where !== undefined && isEmptyWhere(filter.where))) {
      ctx.addIssue({ code: 'custom', path: ['where'], message: 'must hold at least one condition' });
      return z.NEVER;
    }
    return { filter, dry_run: value.dry_run ?? false, user_id: value.user_id ?? DEFAULT_USER };
  });

export const idParamsSchema = z.object({ id: nonBlank('id').meta({ description: "The memory's id" }), user_id: userId });

/** get (/invoke, MCP get_memory): with `history`, the answer carries every version too. */
export const getParamsSchema = idParamsSchema.extend({
  history: z
    .union([z.boolean(), z.enum(['true', 'false', '1', '0'])], { error: 'history must be true or false' })
    .transform((value) => value === true || value === 'true' || value === '1')
    .optional()
    .meta({ description: 'Include every version of the memory, oldest first (`versions`)' }),
});

export const userScopeSchema = z.object({ user_id: userId });

/** GET /mem/entities: whose, and how many (the most mentioned first). */
export const entitiesParamsSchema = z.object({ user_id: userId, limit: limit.meta({ description: `How many entities, the most mentioned first (default ${DEFAULT_ENTITIES_LIMIT}, capped at ${MAX_LIMIT})` }) });

export type AddParams = z.infer<typeof addParamsSchema>;

/** The most operations one POST /mem/batch may carry. */
export const MAX_BATCH_OPERATIONS = 1000;

/** One operation of a batch, each as its own route takes it (the batch names the user once). */
export const batchAddSchema = addParamsSchema.omit({ user_id: true }).extend({ op: z.literal('add') });
export const batchUpdateSchema = z
  .object({ op: z.literal('update'), id: nonBlank('id').meta({ description: "The memory's id" }), ...updateFields })
  .omit({ user_id: true })
  .refine(hasUpdate, someUpdate)
  .refine(oneExpiry, ONE_EXPIRY);
export const batchDeleteSchema = z.object({ op: z.literal('delete'), id: nonBlank('id').meta({ description: "The memory's id" }) });
export const BATCH_OPERATION_SCHEMAS = { add: batchAddSchema, update: batchUpdateSchema, delete: batchDeleteSchema } as const;
export type BatchOperationInput = z.output<typeof batchAddSchema> | z.output<typeof batchUpdateSchema> | z.output<typeof batchDeleteSchema>;

/**
 * POST /mem/batch: whose memories, and the operations. Each operation is read on its own
 * (src/protocol/batch-operations.ts), so an invalid one refuses only itself; the documented
 * shape of an item is the union of the three.
 */
export const batchParamsSchema = z.object({
  operations: z
    .array(z.unknown(), { error: 'operations must be an array' })
    .min(1, { error: 'operations must hold at least one operation' })
    .max(MAX_BATCH_OPERATIONS, { error: `operations may hold at most ${MAX_BATCH_OPERATIONS} operations` })
    .meta({
      description: `Up to ${MAX_BATCH_OPERATIONS}, applied in order: {"op": "add", "text", ...} (the fields of POST /mem), {"op": "update", "id", ...} (of PATCH /mem/{id}), {"op": "delete", "id"}`,
      items: { oneOf: [batchAddSchema, batchUpdateSchema, batchDeleteSchema].map((schema) => inputSchemaOf(schema)) },
    }),
  user_id: userId,
});

function inputSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  return json;
}
