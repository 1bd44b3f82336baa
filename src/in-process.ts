import { randomUUID } from 'node:crypto';
import { APIUserAbortError, type MemoryPoolError } from 'memorypool-client';
import type * as api from 'memorypool-client';
import { errorFromAnswer, followPages, memoryQuery, walkPages } from 'memorypool-client/internal';
import { loadConfig, type ConfigInput } from './config.js';
import { createError, isAppError } from './errors.js';
import { packageVersion } from './http/package-files.js';
import type { MemoryService } from './memory/memory-service.js';
import { invoke, runAction, type Action } from './protocol/invoke.js';
import { userScopeSchema } from './protocol/memorypool-schemas.js';
import { openService } from './open-service.js';
import type { WebhookStatus } from './webhooks/webhook-deliverer.js';
import { platformAdd, platformSearch } from './protocol/platform.js';
import { parseOr400 } from './protocol/validation.js';

/**
 * Where the pool lives and how it runs: the data directory (`dataDir`) or PostgreSQL
 * (`databaseUrl`), the embedder, the cache budget: the settings of `memorypool serve`, read the
 * same way (options over `MEMORYPOOL_*` variables over the defaults).
 */
export type OpenOptions = Partial<Pick<ConfigInput, 'dataDir' | 'databaseUrl' | 'embedder' | 'modelDir' | 'modelPrecision' | 'cacheMb' | 'topKMax' | 'logLevel' | 'embedderUrl' | 'embedderModel' | 'embedderDimensions' | 'embedderApiKey'>>;

/** The in-process pool: the HTTP client's methods, answers and errors, with the service in this process. */
export interface MemoryPool extends api.MemoryPoolApi {
  /** Writes the index caches, closes the store and the encoder. The pool answers nothing after. */
  close(): Promise<void>;
}

const NO_SCOPE = () => undefined;
/** What `POST /mem` stores as `source` when none is given, so both clients store the same memory. */
const MEM_SOURCE = 'cli';

/**
 * Opens the pool the way the `memorypool` command does (`openService` as a command: the data directory
 * or the database URL, within the cache budget, users loaded on first use) and loads the encoder
 * once. Each method validates with the schemas the HTTP routes use and goes through the same
 * handlers, so it accepts, refuses and answers exactly as the server; errors are the HTTP
 * client's `MemoryPoolError`s, with the status of the service's error code. Nothing is retried:
 * there is no network, and the service's own refusals (503 while storage is down) are the caller's.
 */
export async function openMemoryPool(options: OpenOptions = {}): Promise<MemoryPool> {
  const config = loadConfig(options);
  const { service, close } = await openService(config, { role: 'command' });
  return new InProcessPool(service, close, config.topKMax);
}

class InProcessPool implements MemoryPool {
  private closed = false;

  constructor(
    private readonly service: MemoryService,
    private readonly closeService: () => Promise<void>,
    private readonly topKMax: number,
  ) {}

  add(params: api.AddParams, options?: api.RequestOptions): Promise<api.AddAnswer> {
    return this.run(options, () => platformAdd(this.service, { ...params, request_id: params.request_id ?? randomUUID() }, NO_SCOPE));
  }

  search(params: api.SearchParams, options?: api.RequestOptions): Promise<api.SearchAnswer> {
    return this.run(options, () => platformSearch(this.service, params, this.topKMax, NO_SCOPE));
  }

  remember(params: api.RememberParams, options?: api.RequestOptions): Promise<api.Memory> {
    return this.action('add', params, options) as Promise<api.Memory>;
  }

  recall(params: api.RecallParams, options?: api.RequestOptions): Promise<api.ScoredMemory[]> {
    return this.action('search', memoryQuery(params), options) as Promise<api.ScoredMemory[]>;
  }

  list(params: api.ListParams = {}, options?: api.RequestOptions): Promise<api.Memory[]> {
    return this.action('list', memoryQuery(params), options) as Promise<api.Memory[]>;
  }

  find(params: api.FindParams, options?: api.RequestOptions): Promise<api.ScoredMemory[]> {
    return this.action('search', params, options) as Promise<api.ScoredMemory[]>;
  }

  listPage(params: api.ListPageParams = {}, options?: api.RequestOptions): Promise<api.ListPage> {
    return this.action('page', params, options) as Promise<api.ListPage>;
  }

  forgetWhere(params: api.ForgetWhereParams, options?: api.RequestOptions): Promise<api.DeletedCount> {
    return this.action('purge', params, options) as Promise<api.DeletedCount>;
  }

  batch(params: api.BatchParams, options?: api.RequestOptions): Promise<api.BatchAnswer> {
    return this.action('batch', params, options) as Promise<api.BatchAnswer>;
  }

  listAll(params: Omit<api.ListPageParams, 'cursor'> = {}, options?: api.RequestOptions): AsyncIterable<api.Memory> {
    return walkPages(params, (page) => this.listPage(page, options));
  }

  get(id: string, params: api.UserScope = {}, options?: api.RequestOptions): Promise<api.Memory> {
    return this.action('get', { ...params, id }, options) as Promise<api.Memory>;
  }

  update(id: string, params: api.UpdateParams, options?: api.RequestOptions): Promise<api.Memory> {
    return this.action('update', { ...params, id }, options) as Promise<api.Memory>;
  }

  history(id: string, params: api.UserScope = {}, options?: api.RequestOptions): Promise<api.MemoryHistory> {
    return this.action('history', { ...params, id }, options) as Promise<api.MemoryHistory>;
  }

  forget(id: string, params: api.UserScope = {}, options?: api.RequestOptions): Promise<api.Deleted> {
    return this.action('delete', { ...params, id }, options) as Promise<api.Deleted>;
  }

  stats(params: api.StatsParams = {}, options?: api.RequestOptions): Promise<api.PoolStats> {
    return this.action('stats', params, options) as Promise<api.PoolStats>;
  }

  entities(params: api.EntitiesParams = {}, options?: api.RequestOptions): Promise<api.EntitiesAnswer> {
    return this.action('entities', params, options) as Promise<api.EntitiesAnswer>;
  }

  webhooks(options?: api.RequestOptions): Promise<{ webhooks: WebhookStatus[] }> {
    return this.action('webhooks', {}, options) as Promise<{ webhooks: WebhookStatus[] }>;
  }

  changes(params: api.ChangesParams = {}, options?: api.RequestOptions): Promise<api.ChangesPage> {
    return this.action('changes', params, options) as Promise<api.ChangesPage>;
  }

  followChanges(params: api.FollowChangesParams = {}, options?: api.RequestOptions): AsyncIterable<api.ChangeEvent> {
    return followPages(params, (page) => this.changes(page, options), options?.signal);
  }

  deleteUser(userId: string, options?: api.RequestOptions): Promise<api.DeletedUser> {
    return this.run(options, async () => {
      const { user_id: checked } = parseOr400(userScopeSchema, { user_id: userId });
      return { deleted_user: checked!, deleted: await this.service.deleteUser(checked!) };
    });
  }

  invoke(payload: api.InvokePayload, options?: api.RequestOptions): Promise<unknown> {
    return this.run(options, () => invoke(this.service, payload, NO_SCOPE));
  }

  health(options?: api.RequestOptions): Promise<api.Health> {
    return this.run(options, async () => ({ ok: true as const, service: 'memorypool' as const, version: packageVersion(), count: await this.service.healthCount() }));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.closeService();
  }

  private action(action: Action, params: object, options?: api.RequestOptions): Promise<unknown> {
    return this.run(options, () => runAction(this.service, action, params as Record<string, unknown>, NO_SCOPE, MEM_SOURCE));
  }

  private async run<T>(options: api.RequestOptions | undefined, work: () => Promise<T>): Promise<T> {
    if (options?.signal?.aborted) throw new APIUserAbortError('The call was aborted');
    try {
      if (this.closed) throw createError('SHUTTING_DOWN', 'The pool is closed');
      return await work();
    } catch (error) {
      throw toClientError(error);
    }
  }
}

/** The service's error as the HTTP client would have received it: status and body from the error-code table. */
function toClientError(error: unknown): MemoryPoolError {
  const appError = isAppError(error) ? error : createError('INTERNAL');
  // The CLI's error body: the server's, with the code named.
  const detail = appError.code === 'VALIDATION_FAILED' ? (appError.issues ?? []) : { reason: appError.message, code: appError.code };
  const clientError = errorFromAnswer(appError.status, { detail }, appError.status === 503 ? { 'retry-after': '1' } : {});
  return Object.assign(clientError, { cause: error });
}
