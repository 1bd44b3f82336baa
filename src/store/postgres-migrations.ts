/**
 * The PostgreSQL schema, as versioned migrations applied in order by `PostgresStore.init` under
 * an advisory lock (so replicas starting at once do not race). Append new versions; never edit
 * an applied one.
 *
 * Every table is keyed and hash-partitioned by `user_id`, and every query the service makes
 * names one `user_id`, so the schema can be distributed on Citus with `user_id` as the
 * distribution column (docs/operations.md, "Running several replicas").
 */
import { ESC_CODE, KEY_FUNCTION_SQL, KEY_INLINE_BYTES } from './postgres-text.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Hash partitions per table: enough to keep each partition's indexes small, few enough to plan fast. */
const PARTITIONS = 16;

function hashPartitions(table: string): string {
  return Array.from({ length: PARTITIONS }, (_, i) => `CREATE TABLE ${table}_p${i} PARTITION OF ${table} FOR VALUES WITH (MODULUS ${PARTITIONS}, REMAINDER ${i});`).join('\n');
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'users, memories and add requests, hash-partitioned by user_id',
    sql: `
-- One row per user ever written: the seq counter, the version (high-water mark: +1 on every
-- append or delete, never reused: a deleted user keeps its row with memory_count 0) and the count.
CREATE TABLE users (
  user_id text NOT NULL,
  next_seq bigint NOT NULL DEFAULT 0,
  version bigint NOT NULL DEFAULT 0,
  memory_count bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (user_id)
) PARTITION BY HASH (user_id);
${hashPartitions('users')}

-- The memories; record holds the memory's other fields as the doors return them.
CREATE TABLE memories (
  user_id text NOT NULL,
  seq bigint NOT NULL,
  id text NOT NULL,
  created_at timestamptz NOT NULL,
  record jsonb NOT NULL,
  vector bytea NOT NULL,
  model text NOT NULL,
  PRIMARY KEY (user_id, seq),
  UNIQUE (user_id, id)
) PARTITION BY HASH (user_id);
${hashPartitions('memories')}

-- Idempotency of the platform's Add: inserted in the Add's own transaction, first write wins.
CREATE TABLE add_requests (
  user_id text NOT NULL,
  request_id text NOT NULL,
  PRIMARY KEY (user_id, request_id)
) PARTITION BY HASH (user_id);
${hashPartitions('add_requests')}
`,
  },
  {
    version: 2,
    name: 'memory versions: the history of updated memories',
    sql: `
-- The versions an update replaced (the current one stays in memories, its record carrying its
-- version, updated_at and metadata). Kept out of memories so that loading a user into a replica's
-- cache never reads them; deleted in the same transaction as their memory or their user.
CREATE TABLE memory_versions (
  user_id text NOT NULL,
  id text NOT NULL,
  version integer NOT NULL,
  entry jsonb NOT NULL,
  PRIMARY KEY (user_id, id, version)
) PARTITION BY HASH (user_id);
${hashPartitions('memory_versions')}
`,
  },
  {
    version: 3,
    name: 'any Unicode text: NUL escaped, long keys digested (postgres-text.ts); records as json, in the order written; version numbers of history as bigint',
    sql: `
${KEY_FUNCTION_SQL}
-- Rows written before held no NUL but may hold the escape (U+FDD0) or keys too long to stay as
-- they are: each is rewritten as the encoding would write it now, so one decoding reads every row.
-- The predicates read every row once (the record as text included): a one-time cost of the upgrade.
ALTER TABLE users ADD COLUMN long_user_id text;
COMMENT ON COLUMN users.long_user_id IS 'The user id (encoded) when user_id holds its digest, else null';
UPDATE users
   SET long_user_id = CASE WHEN octet_length(pg_temp.memorypool_escaped(user_id)) > ${KEY_INLINE_BYTES} THEN pg_temp.memorypool_escaped(user_id) END,
       user_id = pg_temp.memorypool_key(user_id)
 WHERE pg_temp.memorypool_has_special(user_id);
UPDATE memories
   SET user_id = pg_temp.memorypool_key(user_id),
       id = pg_temp.memorypool_key(id),
       model = pg_temp.memorypool_escaped(model),
       record = CASE WHEN octet_length(pg_temp.memorypool_escaped(id)) > ${KEY_INLINE_BYTES}
                     THEN jsonb_set(pg_temp.memorypool_escaped(record::text)::jsonb, '{id}', to_jsonb(pg_temp.memorypool_escaped(id)))
                     ELSE pg_temp.memorypool_escaped(record::text)::jsonb END
 WHERE pg_temp.memorypool_has_special(user_id) OR pg_temp.memorypool_has_special(id) OR strpos(model, chr(${ESC_CODE})) > 0 OR strpos(record::text, chr(${ESC_CODE})) > 0;
UPDATE add_requests
   SET user_id = pg_temp.memorypool_key(user_id), request_id = pg_temp.memorypool_key(request_id)
 WHERE pg_temp.memorypool_has_special(user_id) OR pg_temp.memorypool_has_special(request_id);
UPDATE memory_versions
   SET user_id = pg_temp.memorypool_key(user_id), id = pg_temp.memorypool_key(id), entry = pg_temp.memorypool_escaped(entry::text)::jsonb
 WHERE pg_temp.memorypool_has_special(user_id) OR pg_temp.memorypool_has_special(id) OR strpos(entry::text, chr(${ESC_CODE})) > 0;
-- An imported history may number its versions past 2^31 (the JSONL store keeps any integer).
ALTER TABLE memory_versions ALTER COLUMN version TYPE bigint;
-- json keeps the text as written (jsonb reorders keys): a memory's fields and metadata come back
-- in the order they were given, as from the JSONL store. Rows of jsonb keep jsonb's order.
ALTER TABLE memories ALTER COLUMN record TYPE json USING record::json;
ALTER TABLE memory_versions ALTER COLUMN entry TYPE json USING entry::json;
DROP FUNCTION pg_temp.memorypool_has_special(text);
DROP FUNCTION pg_temp.memorypool_key(text);
DROP FUNCTION pg_temp.memorypool_escaped(text);
`,
  },
  {
    version: 4,
    name: 'the change feed: events numbered by one counter in commit order (postgres-changes.ts)',
    sql: `
-- One row: the last seq given to an event. Each write's transaction moves it last, just before
-- COMMIT, holding its row lock until then: seqs follow commit order, with no gaps, on every replica.
-- (Global, not per user: it numbers every user's events.)
CREATE TABLE change_counter (
  id integer PRIMARY KEY CHECK (id = 1),
  last_seq bigint NOT NULL
);
INSERT INTO change_counter (id, last_seq) VALUES (1, 0);

-- The events: no text of any memory (the service joins the memory as it was at that version), so
-- deleting a memory or a user leaves nothing it said here. user_id is the key (the partition
-- column, as in every table), user_name the id as given.
CREATE TABLE memory_changes (
  user_id text NOT NULL,
  seq bigint NOT NULL,
  type text NOT NULL,
  at timestamptz NOT NULL,
  user_name text NOT NULL,
  memory_id text,
  version bigint,
  PRIMARY KEY (user_id, seq)
) PARTITION BY HASH (user_id);
${hashPartitions('memory_changes')}
CREATE INDEX memory_changes_seq ON memory_changes (seq);
CREATE INDEX memory_changes_at ON memory_changes (at);
`,
  },
  {
    version: 5,
    name: 'webhooks: each hook\'s delivery progress and the lease of its one deliverer (postgres-webhooks.ts)',
    sql: `
-- One row per hook (its id: webhooks-file.ts). delivered_seq is the change feed's cursor the hook
-- has been delivered up to; holder and lease_expires_at name the one replica delivering it, which
-- renews the lease while it lives (expiry judged by this database's clock). Times of the retry
-- schedule are Unix ms, as the service computes them.
CREATE TABLE webhook_state (
  hook_id text PRIMARY KEY,
  delivered_seq bigint NOT NULL,
  failures integer NOT NULL DEFAULT 0,
  last_error text,
  failing_since bigint,
  next_try_at bigint,
  failed boolean NOT NULL DEFAULT false,
  holder jsonb,
  lease_expires_at timestamptz
);
`,
  },
  {
    version: 6,
    name: "each user's /mem/stats figures as last measured, shared by every replica (postgres-store.ts, poolFigures)",
    sql: `
-- A cache, not a record: the figures of a user as of its version (users.version) when a replica
-- measured them, so that a replica's first /mem/stats reads them instead of measuring every user
-- again (at 100,000 users, a pass over every memory outlasts the statement timeout). Writes never
-- touch it: a write moves the user's version, which makes its row stale. Deleting a user deletes its row.
CREATE TABLE user_figures (
  user_id text NOT NULL,
  version bigint NOT NULL,
  count bigint NOT NULL,
  sessions bigint NOT NULL,
  bytes bigint NOT NULL,
  expiring boolean NOT NULL,
  PRIMARY KEY (user_id)
) PARTITION BY HASH (user_id);
${hashPartitions('user_figures')}
`,
  },
  {
    version: 7,
    name: "a write's events numbered and inserted in one call (postgres-changes.ts): the counter's lock held for one round trip fewer",
    sql: `
-- The two statements a write ran last, one after the other from the client (move the counter,
-- insert the events), as one function: the counter's row lock, which every writer of every user
-- and replica waits for, is then held from this call to COMMIT only, not across a round trip to
-- the client and back between them. Statements inside a function run one by one as before (a
-- Citus coordinator plans each as it did). A replica of an earlier version keeps issuing the two
-- statements itself: the same lock, the same numbering.
CREATE OR REPLACE FUNCTION memorypool_record_changes(
  user_ids text[], types text[], ats text[], user_names text[], memory_ids text[], versions bigint[]
) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  n bigint := cardinality(user_ids);
  top bigint;
BEGIN
  UPDATE change_counter SET last_seq = change_counter.last_seq + n WHERE id = 1 RETURNING change_counter.last_seq INTO top;
  INSERT INTO memory_changes (user_id, seq, type, at, user_name, memory_id, version)
  SELECT t.user_id, top - n + t.ord, t.type, t.at::timestamptz, t.user_name, t.memory_id, t.version
    FROM unnest(user_ids, types, ats, user_names, memory_ids, versions) WITH ORDINALITY AS t(user_id, type, at, user_name, memory_id, version, ord);
END
$$;
`,
  },
  {
    version: 8,
    name: "a memory's vector kept in its row, not in the TOAST table: ~0.7 KB less a memory, one fetch fewer a load",
    sql: `
-- A row is ~2.7 KB (the 2 KB vector of the 512-dimensional model, the record, the keys), past the
-- 2 KB at which PostgreSQL moves its largest value out of line: each vector went to the TOAST
-- table in two chunks (1,996 bytes and the rest) behind an index, 3,545 bytes a memory on disk
-- against 2,867 kept in the row (PostgreSQL 18, a scratch table of 3,000 such rows), and every
-- load fetched each vector from there. Set on each partition (a partitioned table takes no
-- storage parameters); rows written before stay as they are until rewritten. A row over 8 KB (a
-- long text) is still toasted, its largest values first.
${Array.from({ length: PARTITIONS }, (_, i) => `ALTER TABLE memories_p${i} SET (toast_tuple_target = 8160);`).join('\n')}
`,
  },
  {
    version: 9,
    name: "a memory's stored features (fx) in a narrow table of their own: a load reads them instead of deriving them",
    sql: `
-- What retrieval derives from a memory's text (src/memory/unit-features.ts: its terms and cues,
-- ~30 µs a memory), stored at the write as the JSONL store keeps it in the line, so that a
-- replica loading a cold user reads it back instead of deriving it. Not a column of memories: a
-- row there is ~2.65 KB, just under the size at which a page holds three, and ~200 bytes more
-- left two a page (~4.1 KB a memory on disk against ~3.3). Keyed by the memory's seq: an update
-- moves the memory's row to a new seq and its features with it (the fingerprint in fx rejects
-- them if the text changed); a deletion removes them. A memory written before this version, or
-- by a replica of an earlier one, has none and is derived as before.
CREATE TABLE memory_features (
  user_id text NOT NULL,
  seq bigint NOT NULL,
  fx text NOT NULL,
  PRIMARY KEY (user_id, seq)
) PARTITION BY HASH (user_id);
${hashPartitions('memory_features')}
`,
  },
];
