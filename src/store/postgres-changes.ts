import type pg from 'pg';
import type { ChangeDraft, ChangeEvent, ChangeRead, ChangeType } from './memory-store.js';
import { encodeKey, encodeText } from './postgres-text.js';

/**
 * The change feed on PostgreSQL (tables of migration 4). A write's events are inserted in the
 * write's own transaction, numbered by `change_counter` moved as the transaction's last statement:
 * the row lock it takes is held until COMMIT, so the next writer (of any user, on any replica) is
 * numbered after this one commits. Seqs then follow commit order with no gaps, and a reader that
 * sees seq n has seen every seq below it. Moving the counter and inserting the events is one call
 * (`memorypool_record_changes`, migration 7), so the lock is held from it to COMMIT: one round
 * trip, where the two statements sent one after the other held it across a second one and the
 * client's turn between them (+20-40% writes a second across users with the client's event loop
 * half busy, bench/HISTORY.md).
 */

type Query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<pg.QueryResult<R>>;

/** Numbers the events and inserts them, in the caller's transaction; call it last before COMMIT. */
export async function recordChanges(client: pg.PoolClient, drafts: readonly ChangeDraft[]): Promise<void> {
  if (drafts.length === 0) return;
  await client.query('SELECT memorypool_record_changes($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[])', [
    drafts.map((draft) => encodeKey(draft.user_id)),
    drafts.map((draft) => draft.type),
    drafts.map((draft) => draft.at),
    drafts.map((draft) => encodeText(draft.user_id)),
    drafts.map((draft) => (draft.memory_id === null ? null : encodeText(draft.memory_id))),
    drafts.map((draft) => draft.version),
  ]);
}

interface ChangeRow {
  last: string;
  first: string | null;
  seq: string | null;
  type: ChangeType;
  at_ms: number;
  user_name: string;
  memory_id: string | null;
  version: string | null;
}

/** One statement, so the events, the oldest held and the newest are of one snapshot. */
export async function readChanges(query: Query, after: number, limit: number, userId?: string): Promise<ChangeRead> {
  const { rows } = await query<ChangeRow>(
    `WITH e AS (
       SELECT seq, type, extract(epoch FROM at) * 1000 AS at_ms, user_name, memory_id, version
         FROM memory_changes WHERE seq > $1 AND ($3::text IS NULL OR user_id = $3) ORDER BY seq LIMIT $2)
     SELECT (SELECT last_seq FROM change_counter WHERE id = 1) AS last, (SELECT min(seq) FROM memory_changes) AS first, e.*
       FROM (SELECT 1) AS one LEFT JOIN e ON true ORDER BY e.seq`,
    [after, limit, userId === undefined ? null : encodeKey(userId)],
  );
  const last = Number(rows[0].last);
  const oldest = rows[0].first === null ? last : Number(rows[0].first) - 1;
  const events: ChangeEvent[] = rows
    .filter((row) => row.seq !== null)
    .map((row) => ({
      seq: Number(row.seq),
      type: row.type,
      at: new Date(Number(row.at_ms)).toISOString(),
      user_id: row.user_name,
      memory_id: row.memory_id,
      version: row.version === null ? null : Number(row.version),
    }));
  // Fewer than asked: everything up to the newest was looked at.
  const scanned = events.length < limit ? Math.max(after, last) : events[events.length - 1].seq;
  return { events, scanned, oldest, last };
}

export async function lastChangeSeq(query: Query): Promise<number> {
  const { rows } = await query<{ last_seq: string }>('SELECT last_seq FROM change_counter WHERE id = 1');
  return Number(rows[0].last_seq);
}

/** The newest event stays, as in the JSONL store (there the numbering goes on from it). */
export async function pruneChanges(query: Query, cutoffMs: number): Promise<number> {
  const { rowCount } = await query('DELETE FROM memory_changes WHERE at < to_timestamp($1::float8 / 1000) AND seq < (SELECT last_seq FROM change_counter WHERE id = 1)', [cutoffMs]);
  return rowCount ?? 0;
}
