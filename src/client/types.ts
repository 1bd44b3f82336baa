import type { z } from 'zod';
import type { invokePayloadSchema } from '../protocol/invoke.js';
import type { addParamsSchema, idParamsSchema, listParamsSchema, searchParamsSchema, userScopeSchema } from '../protocol/memorypool-schemas.js';
import type { addRequestSchema, searchRequestSchema } from '../protocol/platform.js';
import type * as answers from '../protocol/response-schemas.js';

/**
 * What the clients send and receive, inferred from the zod schemas the server validates requests
 * with (src/protocol) and describes its answers with (src/protocol/response-schemas.ts, checked
 * against live answers by test/http/openapi.test.ts). Type-only imports: nothing here loads zod,
 * the service or the server at run time.
 */

/** A memory's free-form metadata (issue 16: stored on memories, filtered on with `meta.<key>`). */
export type MemoryMetadata = Record<string, unknown>;

export type Memory = z.infer<typeof answers.memorySchema> & { metadata?: MemoryMetadata; version?: number; updated_at?: string };
export type ScoredMemory = z.infer<typeof answers.scoredMemorySchema> & { metadata?: MemoryMetadata; version?: number; updated_at?: string };
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
export type RememberParams = z.input<typeof addParamsSchema> & { metadata?: MemoryMetadata };

/** Filters shared by recall and list; `metadata` becomes `meta.<key>=<value>`, `since`/`until` are ISO 8601 (issue 16). */
export interface MemoryFilters {
  tag?: z.input<typeof listParamsSchema>['tag'];
  limit?: number;
  user_id?: z.input<typeof listParamsSchema>['user_id'];
  metadata?: Record<string, string | number | boolean>;
  since?: string;
  until?: string;
}

/** `GET /mem/search`. */
export type RecallParams = MemoryFilters & { query: string; explain?: boolean } & Pick<z.input<typeof searchParamsSchema>, 'user_id'>;
/** `GET /mem/list`. */
export type ListParams = MemoryFilters;
/** The user a call on one memory is about (default "default"). */
export type UserScope = Omit<z.input<typeof idParamsSchema>, 'id'>;
export type StatsParams = z.input<typeof userScopeSchema>;

/** `PATCH /mem/{id}` (issue 16): any of the fields; the answer is the memory with its new `version`. */
export interface UpdateParams extends UserScope {
  text?: string;
  tags?: string[];
  importance?: number;
  metadata?: MemoryMetadata;
}

/** `GET /mem/{id}/history` (issue 16): every version, oldest first. */
export interface MemoryHistory {
  id: string;
  versions: Array<{ version: number; text: string; tags: string[]; importance: number; metadata?: MemoryMetadata; updated_at: string }>;
}

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
  get(id: string, params?: UserScope, options?: RequestOptions): Promise<Memory>;
  update(id: string, params: UpdateParams, options?: RequestOptions): Promise<Memory>;
  history(id: string, params?: UserScope, options?: RequestOptions): Promise<MemoryHistory>;
  forget(id: string, params?: UserScope, options?: RequestOptions): Promise<Deleted>;
  stats(params?: StatsParams, options?: RequestOptions): Promise<PoolStats>;
  deleteUser(userId: string, options?: RequestOptions): Promise<DeletedUser>;
  invoke(payload: InvokePayload, options?: RequestOptions): Promise<unknown>;
  health(options?: RequestOptions): Promise<Health>;
}
