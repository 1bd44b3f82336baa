import pg from 'pg';
import { createError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { MemoryVersion } from '../domain/memory.js';
import { batchEvents, planBatch } from './batch-plan.js';
import type { AppendResult, BatchResult, BatchWrite, ChangeRead, MemoryStore, PoolFigure, RemoveResult, StoredUnit, UnitDraft, UpdateResult, UserChanges, UserSnapshot } from './memory-store.js';
import { lastChangeSeq, pruneChanges, readChanges, recordChanges } from './postgres-changes.js';
import { databaseError, isConnectionError, redactedUrl } from './postgres-errors.js';
import { MIGRATIONS } from './postgres-migrations.js';
import { decodingTypes, encodeJson, encodeKey, encodeText, isKeyDigest } from './postgres-text.js';
import { STORE_APPEND, STORE_REWRITE, withSpan } from '../telemetry/tracing.js';
import { POSTGRES_SPAN, tracedClient } from './traced-sql.js';
import { PostgresWebhookState } from './postgres-webhooks.js';
import { patchedRecord, versionOf, withoutWriteMarks, type RecordPatch, type StoredRecord } from './stored-record.js';

/** Any fixed number: the key of the advisory lock that serialises migrations across replicas. */
const MIGRATION_LOCK_KEY = 0x6d656d70; // "memp"
const CONNECT_TIMEOUT_MS = 3_000;
/** A statement that takes longer than this is abandoned (the request answers 503). */
const STATEMENT_TIMEOUT_MS = 15_000;
/**
 * A memory row's bytes, column by column: `pg_column_size(m.*)` would build the whole row, reading
 * each vector back from TOAST (2 KB of random floats is stored out of line): 9-10 s for the figures
 * of 10,000 users (300,000 memories) against 4.5-5.6 s column by column, most of which is then
 * parsing each record's JSON for its session. The fixed part: the tuple header, seq and created_at.
 */
const ROW_BYTES = 'pg_column_size(m.user_id) + pg_column_size(m.id) + pg_column_size(m.record) + pg_column_size(m.vector) + pg_column_size(m.model) + 40';
/** A user's figures as `user_figures` holds them (or a measure reads them), bigints as text. */
interface FiguresRow {
  key: string;
  version: string;
  count: string;
  sessions: string;
  bytes: string;
  expiring: boolean;
}

/** Users whose figures one statement of `poolFigures` reads. */
const FIGURES_BATCH = 1_000;

export interface PostgresStoreOptions {
  url: string;
  logger: Logger;
  /** Connections per replica. */
  poolSize?: number;
}

/** A row of `memories` as the service reads it. */
interface MemoryRow {
  seq: string;
  id: string;
  record: Omit<StoredRecord, 'seq' | 'model'>;
  vector: Buffer;
  model: string;
  /** The memory's stored features (memory_features), when a load asked for them and it has them. */
  fx?: string | null;
}

/**
 * The store contract on PostgreSQL, the source of truth shared by every replica. Each write is
 * one short transaction that locks the user's row in `users` (so a user's seqs are assigned in
 * commit order and the version moves by one per write); the Add's request id is inserted in the
 * same transaction under a unique key, so of two replicas racing the same Add the first wins.
 * Every statement names one user_id (but the change feed's, postgres-changes.ts, whose events
 * each write records in its own transaction). Connection failures become STORAGE_UNAVAILABLE (503 with
 * retry-after); the pool reconnects by itself when the database is back.
 */
export class PostgresStore implements MemoryStore {
  readonly kind = 'postgres';
  readonly location: string;
  readonly indexCache = null;
  readonly webhooks: PostgresWebhookState;
  private readonly pool: pg.Pool;
  private readonly logger: Logger;
  /** The pool's totals as of the change feed's counter (`poolCounts`). */
  private counts: { seq: number; memories: number; users: number } | null = null;
  /** `poolFigures`' last answer as of the change counter then, while no user in it holds an expiring memory (whose counts depend on the instant). */
  private listed: { seq: number; figures: PoolFigure[] } | null = null;
  /** Each user's figures as of its version (`poolFigures`), by key. */
  private readonly figures = new Map<string, { userId: string; version: string; count: number; sessions: number; bytes: number; expiring: boolean }>();

  constructor(options: PostgresStoreOptions) {
    this.location = redactedUrl(options.url);
    this.logger = options.logger;
    this.pool = new pg.Pool({
      connectionString: options.url,
      max: options.poolSize ?? 10,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      statement_timeout: STATEMENT_TIMEOUT_MS,
      idleTimeoutMillis: 30_000,
      // Every text and JSON value read back is decoded (postgres-text.ts); each write encodes its own.
      types: decodingTypes,
    });
    // An idle connection dropped by the server (restart, failover) must not crash the process.
    this.pool.on('error', (error) => this.logger.warn({ err: error.message }, 'PostgreSQL connection lost; reconnecting on the next query'));
    this.webhooks = new PostgresWebhookState((text, values) => this.query(text, values));
  }

  /** Applies the migrations this database lacks, one replica at a time. */
  async init(): Promise<void> {
    await this.withClient(async (client) => {
      await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      try {
        await client.query('CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())');
        const applied = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((row) => row.version));
        // A newer build's migrations: its tables may mean what this build would misread.
        const known = Math.max(...MIGRATIONS.map((migration) => migration.version));
        const newest = Math.max(0, ...applied);
        if (newest > known) {
          throw createError('STORAGE_UNAVAILABLE', `The database's schema is at version ${newest}, migrated by a newer memorypool; this build knows versions up to ${known} and will not misread it: upgrade memorypool (CHANGELOG.md)`);
        }
        for (const migration of MIGRATIONS) {
          if (applied.has(migration.version)) continue;
          await client.query('BEGIN');
          try {
            await client.query(migration.sql);
            await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
            await client.query('COMMIT');
          } catch (error) {
            await client.query('ROLLBACK').catch(() => undefined);
            throw error;
          }
          this.logger.info({ version: migration.version, name: migration.name }, 'PostgreSQL schema migrated');
        }
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
      }
    });
  }

  async close(): Promise<void> {
    await this.pool.end();
  }

  async listUsers(): Promise<string[]> {
    const { rows } = await this.query<{ user_id: string }>('SELECT coalesce(long_user_id, user_id) AS user_id FROM users WHERE memory_count > 0 ORDER BY coalesce(long_user_id, user_id) COLLATE "C"');
    return rows.map((row) => row.user_id);
  }

  async countMemories(): Promise<number> {
    return (await this.poolCounts()).memories;
  }

  async countUsers(): Promise<number> {
    return (await this.poolCounts()).users;
  }

  /**
   * The pool's totals, summed over `users` only when the change feed's counter moved since the
   * last sum (every write but a re-embedding moves it, in its own transaction): a /health
   * polling an idle pool of 100,000 users reads one row, not 100,000.
   */
  private async poolCounts(): Promise<{ seq: number; memories: number; users: number }> {
    const seq = await lastChangeSeq((text, values) => this.query(text, values));
    if (this.counts?.seq === seq) return this.counts;
    // One statement: the counter and the sums are of one snapshot.
    const { rows } = await this.query<{ seq: string; memories: string; users: string }>(
      'SELECT (SELECT last_seq FROM change_counter WHERE id = 1) AS seq, coalesce(sum(memory_count), 0) AS memories, count(*) FILTER (WHERE memory_count > 0) AS users FROM users',
    );
    this.counts = { seq: Number(rows[0].seq), memories: Number(rows[0].memories), users: Number(rows[0].users) };
    return this.counts;
  }

  async storedCount(userId: string): Promise<number> {
    const { rows } = await this.query<{ memory_count: string }>('SELECT memory_count FROM users WHERE user_id = $1', [encodeKey(userId)]);
    return rows.length === 0 ? 0 : Number(rows[0].memory_count);
  }

  async userCounts(userId: string, nowMs?: number): Promise<{ count: number; sessions: number }> {
    // Expiry is compared as instants: the stored text is ISO 8601.
    const { rows } = await this.query<{ count: string; sessions: string }>(
      `SELECT count(*) AS count, count(DISTINCT nullif(record->>'session_id', '')) AS sessions FROM memories
        WHERE user_id = $1 AND ($2::float8 IS NULL OR record->>'expires_at' IS NULL OR (record->>'expires_at')::timestamptz > to_timestamp($2::float8 / 1000))`,
      [encodeKey(userId), nowMs ?? null],
    );
    return { count: Number(rows[0].count), sessions: Number(rows[0].sessions) };
  }

  /**
   * One query for every user's version; the figures of those whose version moved since this
   * replica last knew them (or that hold an expiring memory, whose counts depend on the instant)
   * are read from `user_figures`, where any replica left them, and only those still stale are
   * measured, a batch of users a statement, and left there for the others. A replica's first call
   * then costs a read of the saved figures, not a pass over every memory: at 100,000 users (3M
   * memories) that pass took 18.8 s as one statement, past the statement timeout, and ~0.3-0.4 s
   * a batch of 1,000 users.
   */
  async poolFigures(nowMs: number): Promise<PoolFigure[]> {
    // Read before the users: a write committed after it moves the counter past what is kept here.
    const seq = await lastChangeSeq((text, values) => this.query(text, values));
    if (this.listed?.seq === seq) return this.listed.figures.slice();
    const { rows } = await this.query<{ key: string; user_id: string; version: string }>('SELECT user_id AS key, coalesce(long_user_id, user_id) AS user_id, version FROM users WHERE memory_count > 0');
    const present = new Set(rows.map((row) => row.key));
    for (const key of this.figures.keys()) if (!present.has(key)) this.figures.delete(key);
    const stale = rows.filter((row) => {
      const known = this.figures.get(row.key);
      return !known || known.version !== row.version || known.expiring;
    });
    // Many users unknown (a replica's first call): the saved figures read whole, one statement, not a batch at a time.
    const savedAll = stale.length > FIGURES_BATCH ? await this.savedFigures(null) : null;
    for (let start = 0; start < stale.length; start += FIGURES_BATCH) {
      const batch = stale.slice(start, start + FIGURES_BATCH);
      const savedByKey = savedAll ?? (await this.savedFigures(batch.map((row) => encodeKey(row.user_id))));
      const unmeasured: typeof batch = [];
      for (const row of batch) {
        const figures = savedByKey.get(row.key);
        if (figures && figures.version === row.version && !figures.expiring) {
          this.figures.set(row.key, { userId: row.user_id, version: row.version, count: Number(figures.count), sessions: Number(figures.sessions), bytes: Number(figures.bytes), expiring: false });
        } else {
          unmeasured.push(row);
        }
      }
      if (unmeasured.length > 0) await this.measureFigures(unmeasured, nowMs);
    }
    const known = rows.map((row) => this.figures.get(row.key)!);
    const figures = known
      .filter((entry) => entry.count > 0)
      .map(({ userId, count, sessions, bytes }) => ({ userId, count, sessions, bytes }))
      .sort((a, b) => (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0));
    // Unchanged until the next write, unless some user's counts move with the clock.
    this.listed = known.some((entry) => entry.expiring) ? null : { seq, figures };
    return figures.slice();
  }

  /** The figures `user_figures` holds for these keys (as stored), or for every user. */
  private async savedFigures(keys: string[] | null): Promise<Map<string, FiguresRow>> {
    const { rows } = await this.query<FiguresRow>(
      'SELECT user_id AS key, version, count, sessions, bytes, expiring FROM user_figures WHERE $1::text[] IS NULL OR user_id = ANY($1)',
      [keys],
    );
    return new Map(rows.map((row) => [row.key, row]));
  }

  /** Measures the users' figures from their memories (one statement), keeps them, and saves them in `user_figures` for every replica. */
  private async measureFigures(users: ReadonlyArray<{ key: string; user_id: string; version: string }>, nowMs: number): Promise<void> {
    const keys = users.map((row) => encodeKey(row.user_id));
    const measured = await this.query<Omit<FiguresRow, 'version'>>(
      `SELECT user_id AS key,
              count(*) FILTER (WHERE NOT expired) AS count,
              count(DISTINCT nullif(record->>'session_id', '')) FILTER (WHERE NOT expired) AS sessions,
              sum(bytes) AS bytes,
              bool_or(record->>'expires_at' IS NOT NULL) AS expiring
         FROM (SELECT user_id, record, ${ROW_BYTES} AS bytes, coalesce((record->>'expires_at')::timestamptz <= to_timestamp($2::float8 / 1000), false) AS expired
                 FROM memories m WHERE user_id = ANY($1)) m
        GROUP BY user_id`,
      // The keys as stored: a key read back is decoded (postgres-text.ts), NUL and all.
      [keys, nowMs],
    );
    const byKey = new Map(measured.rows.map((row) => [row.key, row]));
    const saved: Array<{ key: string; version: string; count: number; sessions: number; bytes: number; expiring: boolean }> = [];
    users.forEach((row, i) => {
      const figures = byKey.get(row.key);
      const entry = { userId: row.user_id, version: row.version, count: Number(figures?.count ?? 0), sessions: Number(figures?.sessions ?? 0), bytes: Number(figures?.bytes ?? 0), expiring: figures?.expiring ?? false };
      this.figures.set(row.key, entry);
      saved.push({ key: keys[i], version: row.version, count: entry.count, sessions: entry.sessions, bytes: entry.bytes, expiring: entry.expiring });
    });
    // A cache: a replica that cannot write it (a read-only role, a full disk) measures again next time, and answers now.
    await this.query(
      `INSERT INTO user_figures AS f (user_id, version, count, sessions, bytes, expiring)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[], $5::bigint[], $6::boolean[])
       ON CONFLICT (user_id) DO UPDATE SET version = excluded.version, count = excluded.count, sessions = excluded.sessions, bytes = excluded.bytes, expiring = excluded.expiring
        WHERE f.version <= excluded.version`,
      [saved.map((entry) => entry.key), saved.map((entry) => entry.version), saved.map((entry) => entry.count), saved.map((entry) => entry.sessions), saved.map((entry) => entry.bytes), saved.map((entry) => entry.expiring)],
    ).catch((error: unknown) => this.logger.warn({ err: error }, 'the measured /mem/stats figures were not saved in user_figures'));
  }

  async storedBytes(userId: string): Promise<number> {
    const { rows } = await this.query<{ bytes: string }>(`SELECT coalesce(sum(${ROW_BYTES}), 0) AS bytes FROM memories m WHERE user_id = $1`, [encodeKey(userId)]);
    return Number(rows[0].bytes);
  }

  async load(userId: string): Promise<UserSnapshot> {
    const { version, units } = await this.changesSince(userId, 0);
    return { version, units };
  }

  async version(userId: string): Promise<number> {
    const { rows } = await this.query<{ version: string }>('SELECT version FROM users WHERE user_id = $1', [encodeKey(userId)]);
    return rows.length === 0 ? 0 : Number(rows[0].version);
  }

  /** One statement, so the version, the count and the rows are of one snapshot. */
  async changesSince(userId: string, fromSeq: number): Promise<UserChanges> {
    const { rows } = await this.query<Partial<MemoryRow> & { version: string; memory_count: string }>(
      `SELECT u.version, u.memory_count, m.seq, m.id, m.record, m.vector, m.model, f.fx
         FROM users u LEFT JOIN memories m ON m.user_id = u.user_id AND m.seq >= $2
              LEFT JOIN memory_features f ON f.user_id = m.user_id AND f.seq = m.seq
        WHERE u.user_id = $1
        ORDER BY m.seq`,
      [encodeKey(userId), fromSeq],
    );
    if (rows.length === 0) return { version: 0, count: 0, units: [] };
    const memoryRows = rows.filter((row) => row.seq !== null && row.seq !== undefined) as MemoryRow[];
    const slab = vectorSlab(memoryRows.map((row) => row.vector));
    const units = memoryRows.map((row, i) => storedUnit(userId, row, slab[i]));
    return { version: Number(rows[0].version), count: Number(rows[0].memory_count), units };
  }

  async hasRequest(userId: string, requestId: string): Promise<boolean> {
    const { rowCount } = await this.query('SELECT 1 FROM add_requests WHERE user_id = $1 AND request_id = $2', [encodeKey(userId), encodeKey(requestId)]);
    return (rowCount ?? 0) > 0;
  }

  async append(userId: string, drafts: readonly UnitDraft[], options: { requestId?: string } = {}): Promise<AppendResult | null> {
    const userKey = encodeKey(userId);
    return this.transaction(STORE_APPEND, async (client) => {
      if (options.requestId !== undefined) {
        // Waits for a racing transaction holding the same key, then sees its commit: first write wins.
        const claimed = await client.query('INSERT INTO add_requests (user_id, request_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [userKey, encodeKey(options.requestId)]);
        if (claimed.rowCount === 0) return null;
      }
      const count = drafts.length;
      const { rows } = await client.query<{ first_seq: string; version: string }>(
        `INSERT INTO users AS u (user_id, long_user_id, next_seq, version, memory_count) VALUES ($1, $3, $2, 1, $2)
         ON CONFLICT (user_id) DO UPDATE SET next_seq = u.next_seq + $2, version = u.version + 1, memory_count = u.memory_count + $2
         RETURNING u.next_seq - $2 AS first_seq, u.version`,
        [userKey, count, isKeyDigest(userKey) ? encodeText(userId) : null],
      );
      const firstSeq = Number(rows[0].first_seq);
      const version = Number(rows[0].version);
      const records: StoredRecord[] = drafts.map(({ record }, i) => ({ ...record, seq: firstSeq + i }));
      if (count > 0) {
        await insertRecords(client, userKey, records.map((record, i) => ({ record, vector: drafts[i].vector })));
        // An imported memory brings the versions it replaced (export carries them).
        const versions = records.flatMap((record) => (record.history ?? []).map((entry) => ({ id: record.id, entry })));
        if (versions.length > 0) await insertVersions(client, userKey, versions);
        const at = new Date().toISOString();
        await recordChanges(client, records.map((record) => ({ type: 'added', at, user_id: userId, memory_id: record.id, version: record.version ?? 1 })));
      }
      return { records: records.map(({ history: _history, ...record }) => record), previousVersion: version - 1, version };
    });
  }

  remove(userId: string, ids: readonly string[], options: { expired?: boolean } = {}): Promise<RemoveResult> {
    return this.removeWhere(userId, 'id = ANY($2::text[])', [ids.map(encodeKey)], options.expired ? 'expired' : 'deleted');
  }

  removeOlderThan(userId: string, cutoffMs: number): Promise<RemoveResult> {
    return this.removeWhere(userId, 'created_at < to_timestamp($2::float8 / 1000)', [timestampMs(cutoffMs)]);
  }

  /** One transaction: the user's row locked (the seq and version move), the old version archived, the row replaced. */
  async update(userId: string, id: string, patch: RecordPatch): Promise<UpdateResult | null> {
    const userKey = encodeKey(userId);
    const idKey = encodeKey(id);
    return this.transaction(STORE_REWRITE, async (client) => {
      const locked = await client.query<{ version: string; next_seq: string }>('SELECT version, next_seq FROM users WHERE user_id = $1 FOR UPDATE', [userKey]);
      if (locked.rows.length === 0) return null;
      const current = await client.query<MemoryRow>('SELECT seq, id, record, model FROM memories WHERE user_id = $1 AND id = $2', [userKey, idKey]);
      if (current.rows.length === 0) return null;
      const old = storedUnit(userId, current.rows[0], new Float32Array(0)).record;
      const previousVersion = Number(locked.rows[0].version);
      const record = patchedRecord(old, patch, Number(locked.rows[0].next_seq));
      await insertVersions(client, userKey, [{ id, entry: versionOf(old) }]);
      await client.query(
        `UPDATE memories SET seq = $3, record = $4::json, vector = coalesce($5::bytea, vector), model = $6 WHERE user_id = $1 AND id = $2`,
        [userKey, idKey, record.seq, encodeJson(recordColumn(record)), patch.vector ? vectorBytes(patch.vector) : null, encodeText(record.model ?? '')],
      );
      await moveFeatures(client, userKey, [{ from: old.seq, to: record.seq }]);
      await client.query('UPDATE users SET next_seq = next_seq + 1, version = version + 1 WHERE user_id = $1', [userKey]);
      await recordChanges(client, [{ type: 'updated', at: patch.updatedAt, user_id: userId, memory_id: id, version: record.version ?? 1 }]);
      return { record, previousSeq: old.seq, previousVersion, version: previousVersion + 1 };
    });
  }

  /**
   * One transaction with the user's row locked: the rows the batch names read, its writes applied
   * in order in memory (batch-plan.ts), then the end state written (new rows, replaced rows with
   * their versions archived, deleted rows with their history) and the seq, count and version moved once.
   */
  async batch(userId: string, writes: readonly BatchWrite[]): Promise<BatchResult> {
    const userKey = encodeKey(userId);
    return this.transaction(STORE_REWRITE, async (client) => {
      await client.query('INSERT INTO users (user_id, long_user_id, next_seq, version, memory_count) VALUES ($1, $2, 0, 0, 0) ON CONFLICT (user_id) DO NOTHING', [
        userKey,
        isKeyDigest(userKey) ? encodeText(userId) : null,
      ]);
      const locked = await client.query<{ version: string; next_seq: string }>('SELECT version, next_seq FROM users WHERE user_id = $1 FOR UPDATE', [userKey]);
      const previousVersion = Number(locked.rows[0].version);
      const named = [...new Set(writes.flatMap((write) => (write.kind === 'add' ? [] : [write.id])))];
      const rows = named.length === 0 ? [] : (await client.query<MemoryRow>('SELECT seq, id, record, model FROM memories WHERE user_id = $1 AND id = ANY($2::text[])', [userKey, named.map(encodeKey)])).rows;
      const held = new Map(rows.map((row) => [storedUnit(userId, row, new Float32Array(0)).record.id, row.record as StoredRecord]));
      const plan = planBatch(writes, (id) => held.get(id), Number(locked.rows[0].next_seq));
      if (plan.added.length > 0) await insertRecords(client, userKey, plan.added);
      for (const { record, vector } of plan.updated.values()) {
        await client.query(`UPDATE memories SET seq = $3, record = $4::json, vector = coalesce($5::bytea, vector), model = $6 WHERE user_id = $1 AND id = $2`, [
          userKey,
          encodeKey(record.id),
          record.seq,
          encodeJson(recordColumn(record)),
          vector ? vectorBytes(vector) : null,
          encodeText(record.model ?? ''),
        ]);
      }
      if (plan.updated.size > 0) await moveFeatures(client, userKey, [...plan.updated.values()].map(({ record }) => ({ from: held.get(record.id)!.seq, to: record.seq })));
      const replaced = [...plan.updated.values()].flatMap(({ record, replaced }) => replaced.map((entry) => ({ id: record.id, entry })));
      if (replaced.length > 0) await insertVersions(client, userKey, replaced);
      if (plan.removed.length > 0) {
        const ids = plan.removed.map(({ id }) => encodeKey(id));
        await client.query('DELETE FROM memories WHERE user_id = $1 AND id = ANY($2::text[])', [userKey, ids]);
        await client.query('DELETE FROM memory_versions WHERE user_id = $1 AND id = ANY($2::text[])', [userKey, ids]);
        await client.query('DELETE FROM memory_features WHERE user_id = $1 AND seq = ANY($2::bigint[])', [userKey, plan.removed.map(({ seq }) => seq)]);
      }
      const changed = plan.added.length > 0 || plan.updated.size > 0 || plan.removed.length > 0;
      if (!changed) return { previousVersion, version: previousVersion, outcomes: plan.outcomes };
      await client.query('UPDATE users SET next_seq = next_seq + $2, version = version + 1, memory_count = memory_count + $3 WHERE user_id = $1', [
        userKey,
        plan.seqsTaken,
        plan.added.length - plan.removed.length,
      ]);
      await recordChanges(client, batchEvents(plan, userId, new Date().toISOString()));
      return { previousVersion, version: previousVersion + 1, outcomes: plan.outcomes };
    });
  }

  async history(userId: string, id: string): Promise<MemoryVersion[]> {
    const { rows } = await this.query<{ entry: MemoryVersion }>('SELECT entry FROM memory_versions WHERE user_id = $1 AND id = $2 ORDER BY version', [encodeKey(userId), encodeKey(id)]);
    return rows.map((row) => row.entry);
  }

  async deleteUser(userId: string): Promise<number> {
    const userKey = encodeKey(userId);
    return this.transaction(STORE_REWRITE, async (client) => {
      // The row stays as a tombstone: its version moves on, so no replica mistakes a new user of this id for the old one.
      const { rows } = await client.query<{ memory_count: string }>('SELECT memory_count FROM users WHERE user_id = $1 FOR UPDATE', [userKey]);
      if (rows.length === 0) return 0;
      await client.query('DELETE FROM memories WHERE user_id = $1', [userKey]);
      await client.query('DELETE FROM add_requests WHERE user_id = $1', [userKey]);
      await client.query('DELETE FROM memory_versions WHERE user_id = $1', [userKey]);
      await client.query('DELETE FROM memory_features WHERE user_id = $1', [userKey]);
      await client.query('DELETE FROM user_figures WHERE user_id = $1', [userKey]);
      await client.query('UPDATE users SET version = version + 1, memory_count = 0 WHERE user_id = $1', [userKey]);
      const held = Number(rows[0].memory_count);
      if (held > 0) await recordChanges(client, [{ type: 'user_deleted', at: new Date().toISOString(), user_id: userId, memory_id: null, version: null }]);
      return held;
    });
  }

  async replaceVectors(userId: string, vectors: ReadonlyArray<{ id: string; vector: Float32Array; model: string }>): Promise<void> {
    await this.query(
      `UPDATE memories SET vector = t.vector, model = t.model
         FROM unnest($2::text[], $3::bytea[], $4::text[]) AS t(id, vector, model)
        WHERE memories.user_id = $1 AND memories.id = t.id`,
      [encodeKey(userId), vectors.map((entry) => encodeKey(entry.id)), vectors.map((entry) => vectorBytes(entry.vector)), vectors.map((entry) => encodeText(entry.model))],
    );
  }

  readChanges(after: number, limit: number, userId?: string): Promise<ChangeRead> {
    return readChanges((text, values) => this.query(text, values), after, limit, userId);
  }

  lastChangeSeq(): Promise<number> {
    return lastChangeSeq((text, values) => this.query(text, values));
  }

  pruneChanges(cutoffMs: number): Promise<number> {
    return pruneChanges((text, values) => this.query(text, values), cutoffMs);
  }

  private async removeWhere(userId: string, condition: string, values: unknown[], type: 'deleted' | 'expired' = 'deleted'): Promise<RemoveResult> {
    const userKey = encodeKey(userId);
    return this.transaction(STORE_REWRITE, async (client) => {
      const locked = await client.query<{ version: string }>('SELECT version FROM users WHERE user_id = $1 FOR UPDATE', [userKey]);
      if (locked.rows.length === 0) return { removed: [], previousVersion: 0, version: 0 };
      const previousVersion = Number(locked.rows[0].version);
      const { rows } = await client.query<{ id: string; seq: string }>(
        `DELETE FROM memories WHERE user_id = $1 AND ${condition} RETURNING coalesce(record->>'id', id) AS id, seq`,
        [userKey, ...values],
      );
      if (rows.length === 0) return { removed: [], previousVersion, version: previousVersion };
      // A deleted memory is gone for good: its history goes in the same transaction.
      await client.query('DELETE FROM memory_versions WHERE user_id = $1 AND id = ANY($2::text[])', [userKey, rows.map((row) => encodeKey(row.id))]);
      await client.query('DELETE FROM memory_features WHERE user_id = $1 AND seq = ANY($2::bigint[])', [userKey, rows.map((row) => row.seq)]);
      await client.query('UPDATE users SET version = version + 1, memory_count = memory_count - $2 WHERE user_id = $1', [userKey, rows.length]);
      const at = new Date().toISOString();
      await recordChanges(client, rows.map((row) => ({ type, at, user_id: userId, memory_id: row.id, version: null })));
      return { removed: rows.map((row) => ({ id: row.id, seq: Number(row.seq) })), previousVersion, version: previousVersion + 1 };
    });
  }

  private async query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    try {
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw databaseError(error);
    }
  }

  private async withClient<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw databaseError(error);
    }
    let broken: unknown;
    // A checked-out client reports a dropped connection as an 'error' event: unheard, it would end the process.
    const onError = (error: Error): void => {
      broken = error;
    };
    client.on('error', onError);
    try {
      return await work(client);
    } catch (error) {
      broken ??= error;
      throw databaseError(error);
    } finally {
      client.off('error', onError);
      // A connection that failed mid-transaction is discarded, not returned to the pool.
      client.release(broken instanceof Error && isConnectionError(broken) ? broken : undefined);
    }
  }

  /**
   * One short transaction; the caller acknowledges only after COMMIT returned. Its span (the
   * store's write in a trace) covers taking a connection, the statements and the COMMIT.
   */
  private transaction<T>(span: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return withSpan(span, POSTGRES_SPAN, () => this.withClient(async (connection) => {
      const client = tracedClient(connection);
      await client.query('BEGIN');
      try {
        const result = await work(client);
        if (result === null) await client.query('ROLLBACK');
        else await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      }
    }));
  }
}

/** Completes the row's own parsed `record` rather than copying it. */
function storedUnit(userId: string, row: MemoryRow, vector: Float32Array): StoredUnit {
  const record = row.record as StoredRecord;
  // Rows written before migration 3 keep these in their columns only.
  record.id ??= row.id;
  record.user_id ??= userId;
  record.seq = Number(row.seq);
  record.model = row.model;
  if (typeof row.fx === 'string') record.fx = row.fx;
  return { record, vector };
}

/**
 * The rows' vectors copied into one aligned slab (the driver's Buffers may start at any offset
 * of its pool): one allocation per load instead of one per memory, less for the collector and
 * the allocator to churn through as users are loaded and evicted.
 */
function vectorSlab(vectors: readonly Buffer[]): Float32Array[] {
  const floats = new Float32Array(vectors.reduce((sum, bytes) => sum + bytes.byteLength / 4, 0));
  const bytes = new Uint8Array(floats.buffer);
  let offset = 0;
  return vectors.map((vector) => {
    bytes.set(vector, offset * 4);
    const view = floats.subarray(offset, offset + vector.byteLength / 4);
    offset += vector.byteLength / 4;
    return view;
  });
}

/**
 * What the `record` column holds: the memory's fields in their order, id and user id included
 * (their key columns may hold digests), but the seq and the model, which have columns of their own,
 * and the stored features (`fx`, src/memory/unit-features.ts), which go to memory_features: a
 * row is ~2.65 KB, just under the ~2.7 KB at which a page holds three, and fx's ~200 bytes left
 * two a page (the many-users bench's 10,000 users: 4,153 bytes a memory on disk against 3,262).
 */
function recordColumn(record: StoredRecord): Omit<StoredRecord, 'seq' | 'model'> {
  const { seq: _seq, model: _model, vec: _vec, history: _history, fx: _fx, ...rest } = withoutWriteMarks(record);
  return rest;
}

/** Earliest instant a timestamptz holds (4714-11-24 BC); the latest is past every JavaScript date. */
const TIMESTAMPTZ_MIN_MS = -210_866_803_200_000;

/**
 * Unix ms as `to_timestamp(ms / 1000)` takes them: a date before PostgreSQL's range (the JSONL
 * store keeps any JavaScript date) is -infinity there, which sorts before every cutoff alike.
 */
function timestampMs(ms: number): number {
  return ms < TIMESTAMPTZ_MIN_MS ? -Infinity : ms;
}

/** New rows, each under its record's seq. */
async function insertRecords(client: pg.PoolClient, userKey: string, units: ReadonlyArray<{ record: StoredRecord; vector: Float32Array }>): Promise<void> {
  await client.query(
    `INSERT INTO memories (user_id, seq, id, created_at, record, vector, model)
     SELECT $1, t.seq, t.id, to_timestamp(t.created_ms / 1000), t.record::json, t.vector, t.model
       FROM unnest($2::bigint[], $3::text[], $4::float8[], $5::text[], $6::bytea[], $7::text[]) AS t(seq, id, created_ms, record, vector, model)`,
    [
      userKey,
      units.map(({ record }) => record.seq),
      units.map(({ record }) => encodeKey(record.id)),
      units.map(({ record }) => timestampMs(Date.parse(record.created_at))),
      units.map(({ record }) => encodeJson(recordColumn(record))),
      units.map(({ vector }) => vectorBytes(vector)),
      units.map(({ record }) => encodeText(record.model ?? '')),
    ],
  );
  const featured = units.filter(({ record }) => typeof record.fx === 'string');
  if (featured.length === 0) return;
  await client.query(
    `INSERT INTO memory_features (user_id, seq, fx)
     SELECT $1, t.seq, t.fx FROM unnest($2::bigint[], $3::text[]) AS t(seq, fx)
     ON CONFLICT (user_id, seq) DO UPDATE SET fx = EXCLUDED.fx`,
    [userKey, featured.map(({ record }) => record.seq), featured.map(({ record }) => encodeText(record.fx as string))],
  );
}

/**
 * An updated memory's stored features, moved with it to its new seq: still its own when the
 * update left its text, speaker, time and tags alone; otherwise the fingerprint in them no longer
 * matches and a load derives the memory's features again (as it does for one the JSONL store rewrote).
 */
async function moveFeatures(client: pg.PoolClient, userKey: string, moves: ReadonlyArray<{ from: number; to: number }>): Promise<void> {
  await client.query(
    `UPDATE memory_features f SET seq = t.to_seq FROM unnest($2::bigint[], $3::bigint[]) AS t(from_seq, to_seq)
      WHERE f.user_id = $1 AND f.seq = t.from_seq`,
    [userKey, moves.map(({ from }) => from), moves.map(({ to }) => to)],
  );
}

async function insertVersions(client: pg.PoolClient, userKey: string, versions: ReadonlyArray<{ id: string; entry: MemoryVersion }>): Promise<void> {
  await client.query(
    `INSERT INTO memory_versions (user_id, id, version, entry)
     SELECT $1, t.id, t.version, t.entry::json FROM unnest($2::text[], $3::bigint[], $4::text[]) AS t(id, version, entry)
     ON CONFLICT DO NOTHING`,
    [userKey, versions.map((v) => encodeKey(v.id)), versions.map((v) => v.entry.version), versions.map((v) => encodeJson(v.entry))],
  );
}

function vectorBytes(vector: Float32Array): Buffer {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength);
}
