import { randomBytes } from 'node:crypto';
import type { Logger } from '../logger.js';
import type { ChangeFeed } from '../memory/change-feed.js';
import { thisProcess } from '../store/file-lock.js';
import type { MemoryStore } from '../store/memory-store.js';
import type { HookHolder, HookProgress, WebhookStateStore } from '../store/webhook-state.js';
import { DEFAULT_TIMING, HookDelivery, type DeliveryTiming } from './hook-delivery.js';
import type { WebhookSpec } from './webhooks-file.js';

/**
 * A hook as GET /mem/webhooks shows it (never its secret): its stored progress, with times as ISO
 * 8601, `delivered_seq` null before its first claim, `holder` null when no lease is current.
 */
export type WebhookStatus = Pick<WebhookSpec, 'id' | 'url'> &
  Pick<HookProgress, 'failures' | 'last_error' | 'failed'> & {
    events: string[] | null;
    users: string[] | null;
    delivered_seq: number | null;
    next_try_at: string | null;
    holder: string | null;
    lease_expires_at: string | null;
  };

/**
 * The hooks of MEMORYPOOL_WEBHOOKS_FILE, each with its deliverer (hook-delivery.ts). Every server
 * process runs one per hook; the store's lease lets one of them deliver at a time, across the
 * processes on a data directory and the replicas of a database.
 */
export class WebhookDeliverer {
  private readonly deliveries: HookDelivery[];
  private readonly state: WebhookStateStore;
  private started = false;

  constructor(hooks: readonly WebhookSpec[], options: { feed: ChangeFeed; store: MemoryStore; logger: Logger; timing?: Partial<DeliveryTiming> }) {
    const { pid, host, start } = thisProcess();
    const holder: HookHolder = { id: `${host}:${pid}:${randomBytes(4).toString('hex')}`, host, pid, start };
    const timing = { ...DEFAULT_TIMING, ...options.timing };
    this.state = options.store.webhooks;
    const read = (after: number, limit: number, users: WebhookSpec['users']) =>
      options.feed.read({ after, limit, waitSeconds: 0, userId: users?.length === 1 ? users[0] : undefined, allowed: (userId) => users === null || users.includes(userId) });
    this.deliveries = hooks.map(
      (hook) => new HookDelivery(hook, { read, lastSeq: () => options.store.lastChangeSeq(), state: this.state, holder, logger: options.logger, timing }),
    );
  }

  get size(): number {
    return this.deliveries.length;
  }

  start(): void {
    this.started = true;
    for (const delivery of this.deliveries) delivery.start();
  }

  async stop(): Promise<void> {
    if (this.started) await Promise.all(this.deliveries.map((delivery) => delivery.stop()));
  }

  /** Each configured hook with its stored state, in the file's order. */
  async status(): Promise<WebhookStatus[]> {
    const states = new Map((await this.state.states()).map((state) => [state.hook_id, state]));
    return this.deliveries.map(({ hook }) => {
      const state = states.get(hook.id);
      const iso = (ms: number | null | undefined) => (ms === null || ms === undefined ? null : new Date(ms).toISOString());
      return {
        id: hook.id,
        url: shownUrl(hook.url),
        events: hook.events === null ? null : [...hook.events],
        users: hook.users === null ? null : [...hook.users],
        delivered_seq: state?.delivered_seq ?? null,
        failures: state?.failures ?? 0,
        last_error: state?.last_error ?? null,
        next_try_at: iso(state?.next_try_at),
        failed: state?.failed ?? false,
        holder: state && state.lease_expires_at !== null && state.lease_expires_at > Date.now() ? state.holder : null,
        lease_expires_at: iso(state?.lease_expires_at),
      };
    });
  }
}

/** The URL without a user name or password in it (the query is the receiver's to keep free of secrets). */
function shownUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.username === '' && parsed.password === '') return url;
  parsed.username = '';
  parsed.password = '';
  return parsed.toString();
}
