import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ChangesPage, FeedEvent } from '../memory/change-feed.js';
import type { HookHolder, HookProgress, WebhookStateStore } from '../store/webhook-state.js';
import { NEW_PROGRESS } from '../store/webhook-state.js';
import { postEvent } from './post-event.js';
import { hookWants, type WebhookSpec } from './webhooks-file.js';

/** The retry schedule and the lease (tests shorten them; the defaults are the documented ones). */
export interface DeliveryTiming {
  /** The first retry's delay; each further failure doubles it (ms). */
  retryBaseMs: number;
  /** No delay grows past this (ms). */
  retryMaxMs: number;
  /** Failures in a row for this long give the hook up (ms): 24 h. */
  retryWindowMs: number;
  /** A holder that stops renewing loses the hook after this (ms). */
  leaseMs: number;
  /** How often an idle hook looks for new events (ms). */
  pollMs: number;
  timeoutMs: number;
}

export const DEFAULT_TIMING: DeliveryTiming = {
  retryBaseMs: 1_000,
  retryMaxMs: 60 * 60 * 1000,
  retryWindowMs: 24 * 60 * 60 * 1000,
  leaseMs: 30_000,
  pollMs: 250,
  timeoutMs: 5_000,
};

/** Events read from the feed per page. */
const PAGE = 100;

export interface DeliveryDeps {
  /** The change feed's page after a cursor (every user the hook follows; the service's ChangeFeed). */
  read(after: number, limit: number, users: WebhookSpec['users']): Promise<ChangesPage>;
  /** The feed's newest seq: where a hook never seen before starts. */
  lastSeq(): Promise<number>;
  state: WebhookStateStore;
  holder: HookHolder;
  logger: Logger;
  timing: DeliveryTiming;
}

/**
 * One hook's deliverer in this process. While it holds the hook's lease it reads the change feed
 * after the hook's cursor and POSTs each event the hook wants, one at a time, in seq order; the
 * cursor moves (durably, through the store) only past an event the receiver answered 2xx, so a
 * crash at any point resumes at the first event not acknowledged: at least once, never skipped.
 * A failed attempt holds every later event back until the retry succeeds (exponential backoff
 * with jitter). After `retryWindowMs` of failures in a row the hook is given up, `failed`, its
 * cursor where it was, until a process starts again and takes it up (nothing is dropped).
 * Without the lease it only checks, now and then, whether the holder is gone.
 */
export class HookDelivery {
  readonly hook: WebhookSpec;
  private readonly deps: DeliveryDeps;
  private stopped = false;
  private wake: (() => void) | null = null;
  /** Whether this process has held the hook since it started (a first claim takes a given-up hook up again). */
  private claimed = false;
  private running: Promise<void> | null = null;
  /** Where the hook starts if the store has never seen it: the feed's newest event when this process first asked. */
  private startSeq: number | null = null;

  constructor(hook: WebhookSpec, deps: DeliveryDeps) {
    this.hook = hook;
    this.deps = deps;
  }

  start(): void {
    this.running ??= this.loop();
  }

  /** Ends the loop after the attempt under way, then lets the lease go so another process takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake?.();
    await this.running;
    await this.deps.state.release(this.hook.id, this.deps.holder.id).catch(() => undefined);
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.sleep(await this.step());
      } catch (error) {
        this.deps.logger.warn({ hook: this.hook.id, err: (error as Error).message }, 'webhook delivery: the store is out of reach; trying again');
        await this.sleep(Math.min(this.deps.timing.leaseMs / 3, 5_000));
      }
    }
  }

  /** One round; returns how long to rest before the next. */
  private async step(): Promise<number> {
    const { state, holder, timing } = this.deps;
    const idle = timing.pollMs;
    this.startSeq ??= await this.deps.lastSeq();
    let progress = await state.claim(this.hook.id, holder, timing.leaseMs, this.startSeq);
    if (progress === null) {
      this.claimed = false;
      return Math.min(timing.leaseMs / 3, 1_000);
    }
    if (!this.claimed) {
      this.claimed = true;
      if (progress.failed) {
        this.deps.logger.warn({ hook: this.hook.id, seq: progress.delivered_seq + 1 }, 'webhook: taking up a hook given up earlier');
        progress = { ...progress, ...NEW_PROGRESS };
        if (!(await state.save(this.hook.id, holder.id, progress))) return idle;
      }
    }
    // Renewals come at least every third of the lease, whatever the wait.
    const renewBy = timing.leaseMs / 3;
    if (progress.failed) return renewBy;
    const due = (progress.next_try_at ?? 0) - Date.now();
    if (due > 0) return Math.min(due, renewBy);

    let page: ChangesPage;
    try {
      page = await this.deps.read(progress.delivered_seq, PAGE, this.hook.users);
    } catch (error) {
      if (!(error instanceof AppError && error.code === 'CURSOR_EXPIRED')) throw error;
      return (await this.skipPruned(progress, Number(error.body?.oldest_cursor))) ? 0 : idle;
    }
    let renewedAt = Date.now();
    for (const event of page.events) {
      if (this.stopped) return 0;
      if (!hookWants(this.hook, event)) continue;
      // A page of slow answers outlasts a lease: renew it on the way, or stop if it was lost.
      if (Date.now() - renewedAt > renewBy) {
        if ((await state.claim(this.hook.id, holder, timing.leaseMs, this.startSeq)) === null) return idle;
        renewedAt = Date.now();
      }
      const delivered = await this.deliver(progress, event);
      if (delivered === null) return idle;
      // Failed: the next round waits for its retry.
      if (delivered.failures > 0) return 0;
      progress = delivered;
    }
    const cursor = Number(page.next_cursor);
    if (cursor > progress.delivered_seq) await state.save(this.hook.id, holder.id, { ...progress, delivered_seq: cursor });
    return page.events.length > 0 ? 0 : idle;
  }

  /** One attempt at the event; the progress after it (failures > 0: it failed), null when the lease went meanwhile. */
  private async deliver(progress: HookProgress, event: FeedEvent): Promise<HookProgress | null> {
    const { state, holder, timing, logger } = this.deps;
    const outcome = await postEvent(this.hook, event, progress.failures + 1, timing.timeoutMs);
    let next: HookProgress;
    if (outcome.ok) next = { ...NEW_PROGRESS, delivered_seq: event.seq };
    else {
      const now = Date.now();
      const failures = progress.failures + 1;
      const since = progress.failing_since ?? now;
      const failed = now - since >= timing.retryWindowMs;
      next = { ...progress, failures, last_error: outcome.error, failing_since: since, next_try_at: failed ? null : now + retryDelay(failures, timing), failed };
      if (failed) logger.error({ hook: this.hook.id, seq: event.seq, failures, err: outcome.error }, 'webhook given up: failing for the whole retry window; events wait until a process starts again');
      else logger.warn({ hook: this.hook.id, seq: event.seq, failures, err: outcome.error }, 'webhook delivery failed; retrying');
    }
    return (await state.save(this.hook.id, holder.id, next)) ? next : null;
  }

  /** The feed dropped events the hook never got (it was down past MEMORYPOOL_CHANGES_DAYS): go on from the oldest held, and say so. */
  private async skipPruned(progress: HookProgress, oldest: number): Promise<boolean> {
    const last_error = `events ${progress.delivered_seq + 1}-${oldest} were pruned from the change feed before delivery`;
    this.deps.logger.error({ hook: this.hook.id }, `webhook: ${last_error}`);
    return this.deps.state.save(this.hook.id, this.deps.holder.id, { ...progress, delivered_seq: oldest, last_error });
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped || ms <= 0) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

/** Exponential, with jitter so that the retries of many hooks (or replicas) do not fall in step: half to all of base·2^(n-1). */
export function retryDelay(failures: number, timing: Pick<DeliveryTiming, 'retryBaseMs' | 'retryMaxMs'>): number {
  const full = Math.min(timing.retryMaxMs, timing.retryBaseMs * 2 ** Math.min(failures - 1, 40));
  return Math.round(full * (0.5 + Math.random() * 0.5));
}
