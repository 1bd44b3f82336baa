import type { MemoryFields, MemoryVersion, Metadata } from '../domain/memory.js';

/**
 * One line of a user's `memories.jsonl`: the memory as returned to clients plus what the
 * service needs to rebuild its indexes without re-embedding.
 */
export interface StoredRecord extends MemoryFields {
  /** Per-user monotonic number: the HNSW label and the tie-breaker for "newest". */
  seq: number;
  /** How many records the Add that wrote this one wrote in all; a load that finds fewer drops them (the Add was never acknowledged). */
  batch?: number;
  /**
   * The write a batch's records share when no request id groups them (an adds-only POST
   * /mem/batch, one append): with `batch`, a load that finds fewer drops them, as for an Add.
   * Never leaves the store.
   */
  batch_id?: string;
  /** The unit's own embedding, float32 little-endian, base64. */
  vec?: string;
  /** The embedder (`Embedder.modelId`) that produced `vec`. */
  model?: string;
  /**
   * The versions an update replaced, oldest first (JSONL lines only: PostgreSQL keeps them in
   * `memory_versions`). Inside the line, so a delete's rewrite takes them with it; never in a cache.
   */
  history?: MemoryVersion[];
  /**
   * What the service derived from the record's text for retrieval (terms and cues,
   * src/memory/unit-features.ts), stored so that a load need not derive it again. Opaque to the
   * stores: the JSONL store keeps it as written, PostgreSQL's rows leave it out (postgres-store.ts,
   * recordColumn). Checked against the record before it is used, dropped by an update (the next
   * load derives the changed record's afresh); never in an answer.
   */
  fx?: unknown;
}

/** An update as a store applies it: the fields given replace the stored ones; a new text comes with its vector. */
export interface RecordPatch {
  text?: string;
  tags?: string[];
  importance?: number;
  metadata?: Metadata;
  /** A new scope; null removes it. */
  agentId?: string | null;
  runId?: string | null;
  /** A new expiry (ISO 8601); null removes it. */
  expiresAt?: string | null;
  updatedAt: string;
  vector?: Float32Array;
  model?: string;
}

/** A record's current version, as its history will keep it once replaced. */
export function versionOf(record: StoredRecord): MemoryVersion {
  return {
    version: record.version ?? 1,
    text: record.text,
    tags: record.tags,
    importance: record.importance,
    metadata: record.metadata ?? {},
    updated_at: record.updated_at ?? record.created_at,
    ...(record.agent_id !== undefined ? { agent_id: record.agent_id } : {}),
    ...(record.run_id !== undefined ? { run_id: record.run_id } : {}),
    ...(record.expires_at !== undefined ? { expires_at: record.expires_at } : {}),
  };
}

/**
 * The record without the marks an append writes on its lines for a load to check that the write
 * is whole (`batch`, `batch_id`): they belong to the file, never to an answer or a later write.
 */
export function withoutWriteMarks<T extends { batch?: unknown; batch_id?: unknown }>(record: T): Omit<T, 'batch' | 'batch_id'> {
  const { batch: _batch, batch_id: _batchId, ...rest } = record;
  return rest;
}

/**
 * A record read from its line as a cache holds it: without the write marks (as
 * `withoutWriteMarks`) and its `history` (kept on disk; `history` reads it when asked), in one
 * copy rather than one for each: object rest with excluded keys takes V8's slow path, and a load
 * makes a copy of every memory.
 */
export function cachedRecord(record: StoredRecord): StoredRecord {
  const { history: _history, batch: _batch, batch_id: _batchId, ...rest } = record;
  return rest;
}

/**
 * The record after an update, under the seq the store assigned: an updated memory moves to the
 * end of its user's seqs, so a replica's refresh (the memories from its next seq on) sees it.
 */
export function patchedRecord(record: StoredRecord, patch: RecordPatch, seq: number): StoredRecord {
  const { history: _history, vec: _vec, fx: _fx, ...current } = withoutWriteMarks(record);
  const metadata = patch.metadata ?? record.metadata;
  const next: StoredRecord = {
    ...current,
    seq,
    text: patch.text ?? record.text,
    tags: patch.tags ?? record.tags,
    importance: patch.importance ?? record.importance,
    version: (record.version ?? 1) + 1,
    updated_at: patch.updatedAt,
    model: patch.model ?? record.model,
  };
  if (metadata !== undefined && Object.keys(metadata).length > 0) next.metadata = metadata;
  else delete next.metadata;
  if (patch.agentId === null) delete next.agent_id;
  else if (patch.agentId !== undefined) next.agent_id = patch.agentId;
  if (patch.runId === null) delete next.run_id;
  else if (patch.runId !== undefined) next.run_id = patch.runId;
  if (patch.expiresAt === null) delete next.expires_at;
  else if (patch.expiresAt !== undefined) next.expires_at = patch.expiresAt;
  return next;
}

export function encodeVector(vector: Float32Array): string {
  return Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength).toString('base64');
}

export function decodeVector(encoded: string): Float32Array {
  const bytes = Buffer.from(encoded, 'base64');
  // Copy into an aligned buffer: a Buffer slice may start at an odd offset of the pool.
  const vector = new Float32Array(bytes.byteLength / 4);
  new Uint8Array(vector.buffer).set(bytes);
  return vector;
}

/**
 * Decodes many vectors into one slab when they share a length (one allocation instead of one
 * per memory: less memory and less for the collector), else one by one.
 */
export function decodeVectors(encoded: ReadonlyArray<string | undefined>): Array<Float32Array | null> {
  const lengths = encoded.map((text) => (text === undefined ? -1 : Buffer.byteLength(text, 'base64')));
  const bytes = lengths.find((length) => length >= 0) ?? -1;
  if (bytes <= 0 || bytes % 4 !== 0 || lengths.some((length) => length !== bytes && length !== -1)) {
    return encoded.map((text) => (text === undefined ? null : decodeVector(text)));
  }
  const slab = Buffer.alloc(bytes * encoded.length);
  const floats = new Float32Array(slab.buffer, slab.byteOffset, slab.length / 4);
  const dimensions = bytes / 4;
  return encoded.map((text, i) => {
    if (text === undefined) return null;
    slab.write(text, i * bytes, bytes, 'base64');
    return floats.subarray(i * dimensions, (i + 1) * dimensions);
  });
}

/** Fields a line must have to be a memory at all; anything less is quarantined on load. */
export function isStoredRecord(value: unknown): value is StoredRecord {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const record = value as Record<string, unknown>;
  return (
    typeof record.id === 'string' && record.id !== '' &&
    typeof record.user_id === 'string' &&
    typeof record.text === 'string' &&
    typeof record.seq === 'number' && Number.isInteger(record.seq) && record.seq >= 0 &&
    Array.isArray(record.tags) &&
    typeof record.importance === 'number' &&
    typeof record.created_at === 'string'
  );
}
