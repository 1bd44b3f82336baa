/**
 * The durable progress of each webhook and the lease that makes one process (or replica) its
 * deliverer: the JSONL data directory keeps it in sync/webhooks.json (jsonl/webhook-state-file.ts),
 * PostgreSQL in the webhook_state table (postgres-webhooks.ts). src/webhooks/hook-delivery.ts is
 * the one writer.
 *
 * A hook's row moves only through its holder: `save` and `release` change nothing unless the
 * caller still holds the lease, so a deliverer that lost it (it stalled past the expiry and
 * another took over) cannot move the cursor back or forth behind the new holder's back.
 */

/** Who delivers: one process, named for the status and for a takeover on this host. */
export interface HookHolder {
  /** Unique per process run: `<host>:<pid>:<nonce>`. */
  id: string;
  host: string;
  pid: number;
  /** The process's start time (file-lock.ts), so a reused pid is not taken for the holder. */
  start: string | null;
}

/** Where a hook's delivery stands. Times are Unix ms. */
export interface HookProgress {
  /** The feed cursor: every event the hook wants up to this seq was delivered (answered 2xx). */
  delivered_seq: number;
  /** Failed attempts in a row at the next event. */
  failures: number;
  last_error: string | null;
  /** When the current run of failures began. */
  failing_since: number | null;
  /** When the next attempt is due (null: now). */
  next_try_at: number | null;
  /** Given up after the retry window: no attempt until a process starts again (docs/operations.md, "Webhooks"). */
  failed: boolean;
}

export interface HookState extends HookProgress {
  hook_id: string;
  /** The holder's id, null when none holds it. */
  holder: string | null;
  lease_expires_at: number | null;
}

export interface WebhookStateStore {
  /**
   * Takes or renews the hook's lease for `leaseMs`: when nobody holds it, `holder` holds it, its
   * lease expired, or (one host) its holder's process is gone. A hook never seen starts at
   * `startSeq`. Returns the hook's progress while `holder` holds it, null when another does.
   */
  claim(hookId: string, holder: HookHolder, leaseMs: number, startSeq: number): Promise<HookProgress | null>;
  /** Stores the progress if `holderId` still holds the hook; false when another took it over. */
  save(hookId: string, holderId: string, progress: HookProgress): Promise<boolean>;
  /** Lets the hook go (a clean stop), so another process takes it at once. */
  release(hookId: string, holderId: string): Promise<void>;
  /** Every hook's state as stored. */
  states(): Promise<HookState[]>;
}

export const NEW_PROGRESS: Omit<HookProgress, 'delivered_seq'> = { failures: 0, last_error: null, failing_since: null, next_try_at: null, failed: false };
