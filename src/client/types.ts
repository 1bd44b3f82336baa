import type { z } from 'zod';
import type { invokePayloadSchema } from '../protocol/invoke.js';
import type { addParamsSchema, idParamsSchema, listParamsSchema, updateBodySchema, userScopeSchema } from '../protocol/memorypool-schemas.js';
import type { addRequestSchema, searchRequestSchema } from '../protocol/platform.js';
import type * as answers from '../protocol/response-schemas.js';
import type { changesParamsSchema } from '../protocol/change-schemas.js';
import type * as changeAnswers from '../protocol/change-schemas.js';

/**
 * What the clients send and receive, inferred from the zod schemas the server validates requests
 * with (src/protocol) and describes its answers with (src/protocol/response-schemas.ts, checked
 * against live answers by test/http/openapi.test.ts). Type-only imports: nothing here loads zod,
 * the service or the server at run time.
 */

/** A memory's own fields (strings, numbers, booleans), filtered on with `filter`. */
export type MemoryMetadata = NonNullable<z.input<typeof addParamsSchema>['metadata']>;

export type Memory = z.infer<typeof answers.memorySchema>;
export type ScoredMemory = z.infer<typeof answers.scoredMemorySchema>;
export type MemoryHistory = z.infer<typeof answers.historySchema>;
export type PoolStats = z.infer<typeof answers.poolStatsSchema>;
export type Health = z.infer<typeof answers.healthSchema>;
export type Deleted = z.infer<typeof answers.deletedSchema>;
export type DeletedUser = z.infer<typeof answers.deletedUserSchema>;
export type AddAnswer = z.infer<typeof answers.addAnswerSchema>;
export type SearchAnswer = z.infer<typeof answers.searchAnswerSchema>;

/** The platform's Add; `request_id` is optional here: the client makes one (and keeps it across retries). */
export type AddParams = Omit<z.input<typeof addRequestSchema>, 'request_id'> & { request_id?: string };
export type SearchParams = z.input<typeof searchRequestSchema>;

/** `POST /mem`. */
export type RememberParams = z.input<typeof addParamsSchema>;

/**
 * What recall and list filter on: `tag`, `filter` (metadata that must match, sent as
 * `meta.<key>=<value>`), `since` and `until` (ISO 8601 or Unix milliseconds, on the memory's time).
 */
export type MemoryFilters = Pick<z.input<typeof listParamsSchema>, 'tag' | 'agent_id' | 'run_id' | 'filter' | 'since' | 'until' | 'user_id'> & { limit?: number };

/**
 * A filter expression (POST /mem/search and /mem/list, `where`): `$and`, `$or`, `$not`; leaves
 * `{field: value}` or `{field: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin|$exists|$contains: ...}}`.
 */
export type WhereExpression = { [key: string]: unknown };
/** `POST /mem/search`: recall's fields plus `where`. */
export type FindParams = RecallParams & { where?: WhereExpression };
/** `POST /mem/list`: list's fields plus `where` and the `cursor` of the page before. */
export type ListPageParams = ListParams & { where?: WhereExpression; cursor?: string };
export type ListPage = z.infer<typeof answers.listPageSchema>;
/** `POST /mem/delete`: `where` (required, not empty), the other filters, `dry_run`. */
export type ForgetWhereParams = Omit<ListPageParams, 'cursor' | 'limit'> & { where: WhereExpression; dry_run?: boolean };
export type DeletedCount = z.infer<typeof answers.deletedCountSchema>;

/** `GET /mem/search`. */
export type RecallParams = MemoryFilters & { query: string; explain?: boolean };
/** `GET /mem/list`. */
export type ListParams = MemoryFilters;
/** The user a call on one memory is about (default "default"). */
export type UserScope = Omit<z.input<typeof idParamsSchema>, 'id'>;
export type StatsParams = z.input<typeof userScopeSchema>;

/** `GET /mem/changes`: `after` (a cursor), `limit`, `wait` (seconds, at most 60), `user_id`. */
export type ChangesParams = z.input<typeof changesParamsSchema>;
export type ChangesPage = z.infer<typeof changeAnswers.changesPageSchema>;
export type ChangeEvent = z.infer<typeof changeAnswers.changeEventSchema>;
/** followChanges: where to start (`after`), whose events, and how long each request waits. */
export type FollowChangesParams = Omit<ChangesParams, 'after'> & { after?: string | number };

/** `PATCH /mem/{id}`: any of text, tags, importance, metadata; the answer is the memory at its new `version`. */
export type UpdateParams = z.input<typeof updateBodySchema>;

/** The BIT envelope of `POST /invoke`. */
export type InvokePayload = z.input<typeof invokePayloadSchema>;

/** Per call: cancel it, or change its timeout or retries for this call only. */
export interface RequestOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  retries?: number;
}

/**
 * Every method the HTTP client (`memorypool/client`) and the in-process pool (`memorypool`) share,
 * so switching between them is one line.
 */
export interface MemoryPoolApi {
  add(params: AddParams, options?: RequestOptions): Promise<AddAnswer>;
  search(params: SearchParams, options?: RequestOptions): Promise<SearchAnswer>;
  remember(params: RememberParams, options?: RequestOptions): Promise<Memory>;
  recall(params: RecallParams, options?: RequestOptions): Promise<ScoredMemory[]>;
  list(params?: ListParams, options?: RequestOptions): Promise<Memory[]>;
  find(params: FindParams, options?: RequestOptions): Promise<ScoredMemory[]>;
  listPage(params?: ListPageParams, options?: RequestOptions): Promise<ListPage>;
  forgetWhere(params: ForgetWhereParams, options?: RequestOptions): Promise<DeletedCount>;
  /** Every memory that matches, newest first, a page (of `limit`, default 1,000) at a time: `for await (const m of pool.listAll(...))`. */
  listAll(params?: Omit<ListPageParams, 'cursor'>, options?: RequestOptions): AsyncIterable<Memory>;
  get(id: string, params?: UserScope, options?: RequestOptions): Promise<Memory>;
  update(id: string, params: UpdateParams, options?: RequestOptions): Promise<Memory>;
  history(id: string, params?: UserScope, options?: RequestOptions): Promise<MemoryHistory>;
  forget(id: string, params?: UserScope, options?: RequestOptions): Promise<Deleted>;
  stats(params?: StatsParams, options?: RequestOptions): Promise<PoolStats>;
  /** A page of the change feed after a cursor (`wait`: a long poll). */
  changes(params?: ChangesParams, options?: RequestOptions): Promise<ChangesPage>;
  /** Every change event from `after` on, long-polling: `for await (const event of pool.followChanges({after}))`; stops when `options.signal` aborts. */
  followChanges(params?: FollowChangesParams, options?: RequestOptions): AsyncIterable<ChangeEvent>;
  deleteUser(userId: string, options?: RequestOptions): Promise<DeletedUser>;
  invoke(payload: InvokePayload, options?: RequestOptions): Promise<unknown>;
  health(options?: RequestOptions): Promise<Health>;
}
