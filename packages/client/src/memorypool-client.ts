import { APIUserAbortError, APIConnectionError, errorFromAnswer, MemoryPoolError, APITimeoutError } from './errors.js';
import { walkPages } from './pages.js';
import { followPages } from './changes.js';
import { memoryQuery } from './query.js';
import type {
  AddAnswer,
  AddParams,
  BatchAnswer,
  BatchParams,
  ChangeEvent,
  ChangesPage,
  ChangesParams,
  FollowChangesParams,
  Deleted,
  DeletedCount,
  DeletedUser,
  EntitiesAnswer,
  EntitiesParams,
  FindParams,
  ForgetWhereParams,
  Health,
  InvokePayload,
  ListPage,
  ListPageParams,
  ListParams,
  Memory,
  MemoryHistory,
  MemoryPoolApi,
  PoolStats,
  RecallParams,
  RememberParams,
  RequestOptions,
  WebhooksAnswer,
  ScoredMemory,
  SearchAnswer,
  SearchParams,
  StatsParams,
  UpdateParams,
  UserScope,
} from './types.js';

export const DEFAULT_URL = 'http://127.0.0.1:8751';

export interface ClientOptions {
  /** The server (default: `MEMORYPOOL_URL`, else http://127.0.0.1:8751). */
  url?: string;
  /** Sent as `Authorization: Bearer <token>` (default: `MEMORYPOOL_TOKEN`). */
  token?: string;
  /** Per attempt, the answer included (default 60 s). */
  timeoutMs?: number;
  /** Attempts after the first (default 2). */
  retries?: number;
  /** The first backoff (default 500 ms); it doubles per retry, with up to 25% jitter off. */
  retryDelayMs?: number;
  /** The longest backoff (default 8 s). A `retry-after` of up to a minute is waited as given. */
  maxRetryDelayMs?: number;
  /** Extra headers on every request. */
  headers?: Record<string, string>;
  /** The `fetch` to use (default the platform's). */
  fetch?: typeof fetch;
}

/** Answers the service sends when it did not do the work and the same call may succeed later. */
const RETRYABLE_STATUSES = new Set([408, 425, 429, 500, 502, 503, 504]);
/** `retry-after` is honoured up to this (a minute, as the OpenAI SDKs do); longer ones fall back to the backoff. */
const MAX_RETRY_AFTER_MS = 60_000;

interface Call {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  query?: Record<string, string | string[] | undefined>;
  body?: unknown;
  /**
   * Whether a call that got no answer (connection lost, timeout) may be sent again: true where a
   * repeat cannot store twice. `POST /mem` and `/invoke` have no idempotency key, so a lost answer
   * is not retried (their error answers are: those stored nothing).
   */
  idempotent: boolean;
  /** The platform's Add retries a 409 (a concurrent Add of the same request id), as the platform does. */
  retryConflict?: boolean;
}

/**
 * The memorypool HTTP client: every door of the service (the platform's Add/Search, the MemoryPool
 * protocol, /invoke), retries with exponential backoff and jitter on the answers that stored
 * nothing (408, 425, 429, 5xx; 409 for `add`), honouring `retry-after`, a timeout on every
 * attempt, and `MemoryPoolError`s built from the status and body. No dependency beyond `fetch`.
 */
export class MemoryPoolClient implements MemoryPoolApi {
  readonly url: string;
  readonly timeoutMs: number;
  readonly retries: number;
  private readonly token: string | undefined;
  private readonly retryDelayMs: number;
  private readonly maxRetryDelayMs: number;
  private readonly headers: Record<string, string>;
  private readonly fetch: typeof fetch;

  constructor(options: ClientOptions = {}) {
    const env = (globalThis as { process?: { env: Record<string, string | undefined> } }).process?.env ?? {};
    this.url = (options.url ?? (env.MEMORYPOOL_URL || DEFAULT_URL)).replace(/\/+$/, '');
    this.token = options.token ?? (env.MEMORYPOOL_TOKEN || undefined);
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.retries = options.retries ?? 2;
    this.retryDelayMs = options.retryDelayMs ?? 500;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 8_000;
    this.headers = options.headers ?? {};
    this.fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** The platform's Add; makes a `request_id` when none is given and keeps it across retries (the server stores an Add once). */
  add(params: AddParams, options?: RequestOptions): Promise<AddAnswer> {
    const body = { ...params, request_id: params.request_id ?? crypto.randomUUID() };
    return this.call({ method: 'POST', path: '/add', body, idempotent: true, retryConflict: true }, options);
  }

  /** The platform's Search: `{data: [{id, content, score, created_at}]}`, best first. */
  search(params: SearchParams, options?: RequestOptions): Promise<SearchAnswer> {
    return this.call({ method: 'POST', path: '/search', body: params, idempotent: true }, options);
  }

  remember(params: RememberParams, options?: RequestOptions): Promise<Memory> {
    return this.call({ method: 'POST', path: '/mem', body: params, idempotent: false }, options);
  }

  recall(params: RecallParams, options?: RequestOptions): Promise<ScoredMemory[]> {
    return this.call({ method: 'GET', path: '/mem/search', query: memoryQuery(params), idempotent: true }, options);
  }

  list(params: ListParams = {}, options?: RequestOptions): Promise<Memory[]> {
    return this.call({ method: 'GET', path: '/mem/list', query: memoryQuery(params), idempotent: true }, options);
  }

  /** recall with a JSON body: `where` expressions too. */
  find(params: FindParams, options?: RequestOptions): Promise<ScoredMemory[]> {
    return this.call({ method: 'POST', path: '/mem/search', body: params, idempotent: true }, options);
  }

  /** A page of the list and the cursor of the next (null after the last). */
  listPage(params: ListPageParams = {}, options?: RequestOptions): Promise<ListPage> {
    return this.call({ method: 'POST', path: '/mem/list', body: params, idempotent: true }, options);
  }

  /** Deletes every memory matching (or, with dry_run, counts them); a repeat deletes nothing more. */
  forgetWhere(params: ForgetWhereParams, options?: RequestOptions): Promise<DeletedCount> {
    return this.call({ method: 'POST', path: '/mem/delete', body: params, idempotent: true }, options);
  }

  /** Up to 1,000 adds, updates and deletes of one user, written together; each answered in `results`. Not retried without an answer: its adds would store twice. */
  batch(params: BatchParams, options?: RequestOptions): Promise<BatchAnswer> {
    return this.call({ method: 'POST', path: '/mem/batch', body: params, idempotent: false }, options);
  }

  listAll(params: Omit<ListPageParams, 'cursor'> = {}, options?: RequestOptions): AsyncIterable<Memory> {
    return walkPages(params, (page) => this.listPage(page, options));
  }

  get(id: string, params: UserScope = {}, options?: RequestOptions): Promise<Memory> {
    return this.call({ method: 'GET', path: memoryPath(id), query: { user_id: params.user_id }, idempotent: true }, options);
  }

  /** Changes any of text, tags, importance, metadata (at least one); a repeat sets the same values. */
  update(id: string, params: UpdateParams, options?: RequestOptions): Promise<Memory> {
    const { user_id: userId, ...patch } = params;
    return this.call({ method: 'PATCH', path: memoryPath(id), query: { user_id: userId }, body: patch, idempotent: true }, options);
  }

  /** Every version of a memory, oldest first, the current one last. */
  history(id: string, params: UserScope = {}, options?: RequestOptions): Promise<MemoryHistory> {
    return this.call({ method: 'GET', path: `${memoryPath(id)}/history`, query: { user_id: params.user_id }, idempotent: true }, options);
  }

  forget(id: string, params: UserScope = {}, options?: RequestOptions): Promise<Deleted> {
    return this.call({ method: 'DELETE', path: memoryPath(id), query: { user_id: params.user_id }, idempotent: true }, options);
  }

  stats(params: StatsParams = {}, options?: RequestOptions): Promise<PoolStats> {
    return this.call({ method: 'GET', path: '/mem/stats', query: { user_id: params.user_id }, idempotent: true }, options);
  }

  /** Who and what the user's memories mention, the most mentioned first. */
  entities(params: EntitiesParams = {}, options?: RequestOptions): Promise<EntitiesAnswer> {
    return this.call({ method: 'GET', path: '/mem/entities', query: { user_id: params.user_id, limit: params.limit === undefined ? undefined : String(params.limit) }, idempotent: true }, options);
  }

  /** A page of the change feed: the events after `after`, and the cursor to pass next. */
  changes(params: ChangesParams = {}, options?: RequestOptions): Promise<ChangesPage> {
    const query = Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined).map(([key, value]) => [key, String(value)]));
    // Held up to `wait` seconds by the server: the attempt's timeout covers it.
    const timeoutMs = Math.max(options?.timeoutMs ?? this.timeoutMs, (Number(params.wait ?? 0) + 10) * 1000);
    return this.call({ method: 'GET', path: '/mem/changes', query, idempotent: true }, { ...options, timeoutMs });
  }

  followChanges(params: FollowChangesParams = {}, options?: RequestOptions): AsyncIterable<ChangeEvent> {
    return followPages(params, (page) => this.changes(page, options), options?.signal);
  }

  /** Each configured webhook's delivery state (an unscoped token only). */
  webhooks(options?: RequestOptions): Promise<WebhooksAnswer> {
    return this.call({ method: 'GET', path: '/mem/webhooks', idempotent: true }, options);
  }

  /** Everything stored for the user, for good. */
  deleteUser(userId: string, options?: RequestOptions): Promise<DeletedUser> {
    return this.call({ method: 'DELETE', path: `/users/${encodeURIComponent(userId)}`, idempotent: true }, options);
  }

  /** A BIT tool call (`{tool_id, tool, invoked_by, params}`), routed on `params.action`. */
  invoke(payload: InvokePayload, options?: RequestOptions): Promise<unknown> {
    return this.call({ method: 'POST', path: '/invoke', body: payload, idempotent: false }, options);
  }

  health(options?: RequestOptions): Promise<Health> {
    return this.call({ method: 'GET', path: '/health', idempotent: true }, options);
  }

  private async call<T>(call: Call, options: RequestOptions = {}): Promise<T> {
    const retries = options.retries ?? this.retries;
    for (let attempt = 0; ; attempt++) {
      try {
        return (await this.attempt(call, options)) as T;
      } catch (error) {
        if (attempt >= retries || !this.retryable(call, error)) throw error;
        await sleep(this.retryDelay(attempt, (error as MemoryPoolError).headers), options.signal);
      }
    }
  }

  private retryable(call: Call, error: unknown): boolean {
    if (error instanceof APIUserAbortError || !(error instanceof MemoryPoolError)) return false;
    if (error.status === undefined) return call.idempotent;
    return RETRYABLE_STATUSES.has(error.status) || (error.status === 409 && call.retryConflict === true);
  }

  private retryDelay(attempt: number, headers: Record<string, string>): number {
    const asked = retryAfterMs(headers);
    if (asked !== undefined && asked <= MAX_RETRY_AFTER_MS) return asked;
    const backoff = Math.min(this.retryDelayMs * 2 ** attempt, this.maxRetryDelayMs);
    return backoff * (1 - Math.random() * 0.25);
  }

  private async attempt(call: Call, options: RequestOptions): Promise<unknown> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;
    const headers: Record<string, string> = { accept: 'application/json', ...this.headers };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let text: string;
    try {
      response = await this.fetch(this.url + call.path + queryString(call.query), {
        method: call.method,
        headers,
        body: call.body === undefined ? undefined : JSON.stringify(call.body),
        signal,
      });
      text = await response.text();
    } catch (cause) {
      if (options.signal?.aborted) throw new APIUserAbortError('The call was aborted', { cause });
      if (timeout.aborted) throw new APITimeoutError(`No answer within ${timeoutMs} ms`, { cause });
      throw new APIConnectionError(`Connection failed: ${connectionReason(cause)}`, { cause });
    }
    const body = parseJson(text);
    if (response.ok) return body;
    throw errorFromAnswer(response.status, body ?? text, Object.fromEntries(response.headers));
  }
}

function memoryPath(id: string): string {
  return `/mem/${encodeURIComponent(id)}`;
}

function queryString(query: Record<string, string | string[] | undefined> = {}): string {
  // An array is the parameter repeated (several users).
  const entries = Object.entries(query).flatMap(([key, value]) => (value === undefined ? [] : [value].flat().map((item): [string, string] => [key, item])));
  return entries.length === 0 ? '' : `?${new URLSearchParams(entries)}`;
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** `retry-after-ms`, else `retry-after` in seconds or as an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(headers: Record<string, string>): number | undefined {
  const ms = Number.parseFloat(headers['retry-after-ms'] ?? '');
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const value = headers['retry-after'];
  if (value === undefined || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now());
}

function connectionReason(cause: unknown): string {
  const inner = (cause as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  return inner?.code ?? inner?.message ?? (cause as Error | undefined)?.message ?? String(cause);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new APIUserAbortError('The call was aborted'));
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(new APIUserAbortError('The call was aborted'));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
