/**
 * What the client sends and receives, written out so the package needs nothing at run time or at
 * type-check time (no zod, no server). They are the server's own shapes: memorypool's
 * src/client/contract.ts fails its build unless each type here equals the one inferred from the
 * zod schema the server validates requests with or describes its answers with (src/protocol).
 */

/** A memory's own fields (strings, numbers, booleans), filtered on with `filter`. */
export type MemoryMetadata = { [key: string]: string | number | boolean };

/** A memory as every door answers it. */
export interface Memory {
  id: string;
  user_id: string;
  text: string;
  tags: string[];
  importance: number;
  source: string;
  /** When the service stored it (ISO 8601). */
  created_at: string;
  /** 1 when created, +1 per update. */
  version: number;
  /** When the current version was written (created_at until the first update). */
  updated_at: string;
  metadata: MemoryMetadata;
  /** The agent it belongs to (absent: none). */
  agent_id?: string;
  /** The run it belongs to (absent: none). */
  run_id?: string;
  /** When it expires (absent: never). */
  expires_at?: string;
  /** Set on memories written through the platform's Add, as are role, occurred_at, request_id, message_index, part and parts. */
  session_id?: string;
  role?: string;
  /** The message's own time. */
  occurred_at?: string;
  request_id?: string;
  message_index?: number;
  part?: number;
  parts?: number;
}

/** A hit's score as retrieval fused it: added terms, then multipliers (asked for with `explain`). */
export interface ScoreExplanation {
  score: number;
  terms: Array<{ term: string; kind: 'add' | 'multiply'; value: number }>;
}

export interface ScoredMemory extends Memory {
  score: number;
  /** Other memories of the same text (trimmed, white space collapsed, any case) folded into this one. */
  duplicates?: number;
  explanation?: ScoreExplanation;
}

/** One version of a memory, as `history` lists them. */
export interface MemoryVersion {
  version: number;
  text: string;
  tags: string[];
  importance: number;
  metadata: MemoryMetadata;
  updated_at: string;
  agent_id?: string;
  run_id?: string;
  expires_at?: string;
}

export interface MemoryHistory {
  id: string;
  /** Oldest first, the current version last. */
  versions: MemoryVersion[];
}

export interface PoolStats {
  count: number;
  users: number;
  /** `reembedding`: memories still waiting for a vector of this model after a model change. */
  embedder: { model: string; dimensions: number; reembedding: number };
  /** The users this process holds in memory, their estimated size and the budget (null: none). */
  cache: { users: number; estimated_bytes: number; budget_bytes: number | null };
  per_user: Array<{
    user_id: string;
    count: number;
    sessions: number;
    bytes_on_disk: number;
    cached: boolean;
    index: { graph: boolean; loaded: boolean; vectors: number; complete: boolean; pending_flush: boolean };
  }>;
}

export interface Health {
  ok: true;
  service: 'memorypool';
  version: string;
  count: number;
}

export interface Deleted {
  deleted: string;
}

export interface DeletedUser {
  deleted_user: string;
  deleted: number;
}

export interface AddAnswer {
  success: true;
  request_id: string;
  user_id: string;
  session_id: string;
}

export interface SearchAnswer {
  /** Best first. */
  data: Array<{ id: string; content: string; score: number; created_at: string }>;
}

/** The platform's Add; `request_id` is optional here: the client makes one (and keeps it across retries). */
export interface AddParams {
  user_id: string;
  session_id: string;
  /** `timestamp`: the message's time in Unix milliseconds. */
  messages: Array<{ role: string; content: string; timestamp?: number | null }>;
  request_id?: string;
}

export interface SearchParams {
  query: string;
  user_id: string;
  top_k: number;
  options?: string[] | null;
}

/** `POST /mem`. */
export interface RememberParams {
  text: string;
  tags?: string[];
  importance?: number;
  metadata?: MemoryMetadata;
  source?: string;
  agent_id?: string;
  run_id?: string;
  /** ISO 8601 or Unix milliseconds; or `ttl_seconds` from now (not both). */
  expires_at?: string | number;
  ttl_seconds?: number;
  user_id?: string;
}

/**
 * What recall and list filter on: `tag`, `filter` (metadata that must match, sent as
 * `meta.<key>=<value>`), `since` and `until` (ISO 8601 or Unix milliseconds, on the memory's time);
 * whose: `user_id`, or up to 16 users as `user_ids` (or an array of `user_id`), answered merged.
 */
export interface MemoryFilters {
  user_id?: string | string[];
  user_ids?: string[];
  agent_id?: string;
  run_id?: string;
  tag?: string;
  /** Only memories mentioning this entity (as `entities` lists it; any case). */
  entity?: string;
  filter?: MemoryMetadata;
  since?: string | number;
  until?: string | number;
  limit?: number;
}

/**
 * A filter expression (POST /mem/search and /mem/list, `where`): `$and`, `$or`, `$not`; leaves
 * `{field: value}` or `{field: {$eq|$ne|$gt|$gte|$lt|$lte|$in|$nin|$exists|$contains: ...}}`.
 */
export type WhereExpression = { [key: string]: unknown };
/** `POST /mem/search`: recall's fields plus `where`. */
export type FindParams = RecallParams & { where?: WhereExpression };
/** `POST /mem/list`: list's fields plus `where` and the `cursor` of the page before. */
export type ListPageParams = ListParams & { where?: WhereExpression; cursor?: string };

export interface ListPage {
  /** Newest first. */
  memories: Memory[];
  /** Send it back as `cursor` (with the same filters) for the next page; null: this was the last. */
  next_cursor: string | null;
}

/** `POST /mem/delete`: `where` (required, not empty), the other filters, `dry_run`. */
export type ForgetWhereParams = Omit<ListPageParams, 'cursor' | 'limit'> & { where: WhereExpression; dry_run?: boolean };
/** How many went (or, with dry_run, would go). */
export interface DeletedCount {
  deleted: number;
  dry_run: boolean;
}

/** `GET /mem/search`. */
export type RecallParams = MemoryFilters & { query: string; explain?: boolean; /** false: without the server's reranker, if it has one. */ rerank?: boolean };
/** `GET /mem/list`. */
export type ListParams = MemoryFilters;
/** The user a call on one memory is about (default "default"). */
export interface UserScope {
  user_id?: string;
}
export type StatsParams = UserScope;
/** `GET /mem/entities`: whose, and how many (default 100). */
export interface EntitiesParams {
  user_id?: string;
  limit?: number;
}

/** The user's entities, the most mentioned first. */
export interface EntitiesAnswer {
  entities: Array<{
    /** As first written; `entity` filters take it in any case. */
    entity: string;
    /** person: a speaker of the conversations; title: a quoted title; name: any other capitalised name. */
    kind: 'person' | 'title' | 'name';
    /** Memories mentioning it. */
    count: number;
    /** The newest of their times. */
    last_seen: string | null;
  }>;
}

/** A webhook as `GET /mem/webhooks` shows it (never its secret). */
export interface WebhookStatus {
  id: string;
  url: string;
  events: string[] | null;
  users: string[] | null;
  /** Every event it wants up to this seq was delivered; null before its first claim. */
  delivered_seq: number | null;
  failures: number;
  last_error: string | null;
  next_try_at: string | null;
  /** Given up after 24 h of failures; taken up again when a server starts. */
  failed: boolean;
  /** The process holding its lease (host:pid:nonce). */
  holder: string | null;
  lease_expires_at: string | null;
}
export interface WebhooksAnswer {
  webhooks: WebhookStatus[];
}

/** `GET /mem/changes`: `after` (a cursor), `limit`, `wait` (seconds, at most 60), `user_id`. */
export interface ChangesParams {
  after?: number | string;
  limit?: number | string;
  wait?: number | string;
  user_id?: string;
}
/** One change to a memory, in commit order across every process and replica. */
export interface ChangeEvent {
  /** Grows by one per event. */
  seq: number;
  type: 'added' | 'updated' | 'deleted' | 'expired' | 'user_deleted';
  at: string;
  user_id: string;
  /** Null for user_deleted. */
  memory_id: string | null;
  /** The memory as this write left it; null for deletions and for a memory deleted or expired since (the feed keeps no text). */
  memory: Memory | null;
}
export interface ChangesPage {
  /** In seq order. */
  events: ChangeEvent[];
  /** Send it back as `after`. */
  next_cursor: string;
}
/** followChanges: where to start (`after`), whose events, and how long each request waits. */
export type FollowChangesParams = Omit<ChangesParams, 'after'> & { after?: string | number };

/** `PATCH /mem/{id}`: any of text, tags, importance, metadata (null clears agent_id, run_id, expires_at); the answer is the memory at its new `version`. */
export interface UpdateParams {
  text?: string;
  tags?: string[];
  importance?: number;
  metadata?: MemoryMetadata;
  agent_id?: string | null;
  run_id?: string | null;
  expires_at?: string | number | null;
  ttl_seconds?: number;
  user_id?: string;
}

/** One operation of `POST /mem/batch`: an add (the fields of remember), an update (of update, with the id) or a delete. */
export type BatchOperation =
  | ({ op: 'add' } & Omit<RememberParams, 'user_id'>)
  | ({ op: 'update'; id: string } & Omit<UpdateParams, 'user_id'>)
  | { op: 'delete'; id: string };
/** `POST /mem/batch`: up to 1,000 operations of one user, applied in order and written together. */
export interface BatchParams {
  operations: BatchOperation[];
  user_id?: string;
}
/** Each operation's answer in order: `status` as its own route would give it, with the memory, the id deleted or the error. */
export interface BatchAnswer {
  results: {
    /** 201 added, 200 updated or deleted, 400 invalid, 404 not found. */
    status: number;
    memory?: Memory;
    deleted?: string;
    error?: string;
  }[];
}

/** The BIT envelope of `POST /invoke`: `params.action` names the operation. */
export interface InvokePayload {
  tool_id?: unknown;
  tool?: unknown;
  invoked_by?: unknown;
  params?: { [key: string]: unknown };
}

/** Per call: cancel it, or change its timeout or retries for this call only. */
export interface RequestOptions {
  signal?: AbortSignal;
  timeoutMs?: number;
  retries?: number;
}

/**
 * Every method the HTTP client (`memorypool-client`) and the in-process pool (`memorypool`) share,
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
  batch(params: BatchParams, options?: RequestOptions): Promise<BatchAnswer>;
  /** Every memory that matches, newest first, a page (of `limit`, default 1,000) at a time: `for await (const m of pool.listAll(...))`. */
  listAll(params?: Omit<ListPageParams, 'cursor'>, options?: RequestOptions): AsyncIterable<Memory>;
  get(id: string, params?: UserScope, options?: RequestOptions): Promise<Memory>;
  update(id: string, params: UpdateParams, options?: RequestOptions): Promise<Memory>;
  history(id: string, params?: UserScope, options?: RequestOptions): Promise<MemoryHistory>;
  forget(id: string, params?: UserScope, options?: RequestOptions): Promise<Deleted>;
  stats(params?: StatsParams, options?: RequestOptions): Promise<PoolStats>;
  /** Who and what the user's memories mention, the most mentioned first (then `entity` on recall or list). */
  entities(params?: EntitiesParams, options?: RequestOptions): Promise<EntitiesAnswer>;
  /** A page of the change feed after a cursor (`wait`: a long poll). */
  changes(params?: ChangesParams, options?: RequestOptions): Promise<ChangesPage>;
  /** Every change event from `after` on, long-polling: `for await (const event of pool.followChanges({after}))`; stops when `options.signal` aborts. */
  followChanges(params?: FollowChangesParams, options?: RequestOptions): AsyncIterable<ChangeEvent>;
  /** Each configured webhook's delivery state (an unscoped token only). */
  webhooks(options?: RequestOptions): Promise<WebhooksAnswer>;
  deleteUser(userId: string, options?: RequestOptions): Promise<DeletedUser>;
  invoke(payload: InvokePayload, options?: RequestOptions): Promise<unknown>;
  health(options?: RequestOptions): Promise<Health>;
}
