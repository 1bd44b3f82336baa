import type pg from 'pg';
import { isStale } from './file-lock.js';
import type { HookHolder, HookProgress, HookState, WebhookStateStore } from './webhook-state.js';

type Query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;

interface HookRow {
  hook_id: string;
  delivered_seq: string;
  failures: number;
  last_error: string | null;
  failing_since: string | null;
  next_try_at: string | null;
  failed: boolean;
  holder: HookHolder | null;
  lease_ms: string | null;
}

const COLUMNS = `hook_id, delivered_seq, failures, last_error, failing_since, next_try_at, failed, holder,
  (extract(epoch FROM lease_expires_at) * 1000)::bigint AS lease_ms`;

/**
 * The webhooks' progress and leases on PostgreSQL (table `webhook_state`, migration 5), shared by
 * every replica. Each change is one statement that checks the holder in its WHERE clause, so of
 * two replicas racing for a hook one wins, and a replica that lost the lease changes nothing.
 * Expiry is judged by the database's clock (`now()`), the one clock all replicas share. A holder
 * on this host whose process is gone (SIGKILL) is taken over at once: the claim reads the holder
 * first, and takes it only if it is still that holder (a compare-and-set on its id).
 */
export class PostgresWebhookState implements WebhookStateStore {
  private readonly query: Query;

  constructor(query: Query) {
    this.query = query;
  }

  async claim(hookId: string, holder: HookHolder, leaseMs: number, startSeq: number): Promise<HookProgress | null> {
    await this.query('INSERT INTO webhook_state (hook_id, delivered_seq) VALUES ($1, $2) ON CONFLICT (hook_id) DO NOTHING', [hookId, startSeq]);
    const { rows: seen } = await this.query<{ holder: HookHolder | null }>('SELECT holder FROM webhook_state WHERE hook_id = $1', [hookId]);
    const current = seen[0]?.holder ?? null;
    const dead = current !== null && current.id !== holder.id && isStale({ ...current, nonce: current.id });
    // Renewed once half the lease has gone, so most claims by the holder write nothing.
    const { rows } = await this.query<HookRow>(
      `UPDATE webhook_state
          SET holder = CASE WHEN holder->>'id' = $2 AND lease_expires_at - now() > $3 * interval '0.5 millisecond' THEN holder ELSE $4::jsonb END,
              lease_expires_at = CASE WHEN holder->>'id' = $2 AND lease_expires_at - now() > $3 * interval '0.5 millisecond' THEN lease_expires_at
                                      ELSE now() + $3 * interval '1 millisecond' END
        WHERE hook_id = $1
          AND (holder IS NULL OR holder->>'id' = $2 OR lease_expires_at <= now() OR ($5::text IS NOT NULL AND holder->>'id' = $5))
        RETURNING ${COLUMNS}`,
      [hookId, holder.id, leaseMs, JSON.stringify(holder), dead ? current.id : null],
    );
    return rows.length === 0 ? null : progressOf(rows[0]);
  }

  async save(hookId: string, holderId: string, progress: HookProgress): Promise<boolean> {
    const { rowCount } = await this.query(
      `UPDATE webhook_state SET delivered_seq = GREATEST(delivered_seq, $3), failures = $4, last_error = $5, failing_since = $6, next_try_at = $7, failed = $8
        WHERE hook_id = $1 AND holder->>'id' = $2`,
      [hookId, holderId, progress.delivered_seq, progress.failures, progress.last_error, progress.failing_since, progress.next_try_at, progress.failed],
    );
    return (rowCount ?? 0) > 0;
  }

  async release(hookId: string, holderId: string): Promise<void> {
    await this.query("UPDATE webhook_state SET holder = NULL, lease_expires_at = NULL WHERE hook_id = $1 AND holder->>'id' = $2", [hookId, holderId]);
  }

  async states(): Promise<HookState[]> {
    const { rows } = await this.query<HookRow>(`SELECT ${COLUMNS} FROM webhook_state ORDER BY hook_id`);
    return rows.map((row) => ({ ...progressOf(row), hook_id: row.hook_id, holder: row.holder?.id ?? null, lease_expires_at: row.lease_ms === null ? null : Number(row.lease_ms) }));
  }
}

function progressOf(row: HookRow): HookProgress {
  return {
    delivered_seq: Number(row.delivered_seq),
    failures: row.failures,
    last_error: row.last_error,
    failing_since: row.failing_since === null ? null : Number(row.failing_since),
    next_try_at: row.next_try_at === null ? null : Number(row.next_try_at),
    failed: row.failed,
  };
}
