import { randomUUID } from 'node:crypto';
import { copyFile, rm } from 'node:fs/promises';
import { Worker } from 'node:worker_threads';
import { silentLogger } from '../src/logger.js';
import { ANALYZER_VERSION } from '../src/retrieval/analyzer.js';
import { HNSW_M } from '../src/retrieval/vector-index.js';
import { JsonlStore } from '../src/store/jsonl-store.js';
import { VECTOR_INDEX_FILE, VECTOR_INDEX_META_FILE, writeVectorIndexCache } from '../src/store/vector-index-cache.js';
import { encodeVector, type StoredRecord } from '../src/store/stored-record.js';
import type { BuildReply, BuildRequest } from './hnsw-build-worker.js';
import { round } from './http-load.js';
import { mulberry32, type Turn } from './workload.js';
import { serverEncoder } from './server-encoder.js';
import { withStoredFeatures } from '../src/memory/unit-features.js';

/**
 * A large store written straight into the data directory's own format, so the scale figures do
 * not wait hours on the encoder: StoredRecord lines through the service's own JsonlStore, with
 * random unit vectors of the real model's dimension and id (the server takes them as its own and
 * re-embeds nothing), plausible texts, a handful of users, Adds of 20 messages.
 *
 * The per-user HNSW caches and vector sidecars are written too, as the server leaves them after it has run: a
 * restart (the cold start measured) reads them instead of rebuilding. They are built here with
 * the server's M but a smaller efConstruction than the server's: the file's size and load time
 * depend on M and the count only, a graph's quality does not change them, and it builds several
 * times faster.
 */

const BENCH_EF_CONSTRUCTION = 16;
const MESSAGES_PER_ADD = 20;
const ADDS_PER_SESSION = 2;
const DAY_MS = 86_400_000;
const APPEND_RECORDS = 1000;

export interface ScaleStoreOptions {
  dataDir: string;
  memories: number;
  users: number;
  /** Texts to draw from (speaker and content). */
  texts: readonly Turn[];
  seed: number;
}

export interface ScaleStore {
  memories: number;
  users: string[];
  dimensions: number;
  model: string;
  /** Main-thread time writing the records. */
  records_s: number;
  /** Wall time including the index caches (built on a worker thread meanwhile). */
  total_s: number;
}

export async function writeScaleStore(options: ScaleStoreOptions): Promise<ScaleStore> {
  const started = performance.now();
  if (options.memories % options.users !== 0) throw new Error(`${options.memories} memories do not split evenly over ${options.users} users`);
  const perUser = options.memories / options.users;
  const embedder = serverEncoder(); // for its id and dimension only: the model is not loaded
  const dimensions = embedder.dimensions;
  const store = new JsonlStore(options.dataDir, silentLogger());
  await store.init();
  const random = mulberry32(options.seed);
  const gaussian = gaussianSource(random);

  // Every user gets the same sequence of random vectors (its texts differ), so one HNSW graph,
  // built on a worker thread while the records are written, serves as every user's cache file.
  // The server cannot tell: it parses and holds each user's vectors and graph separately.
  const shared = new SharedArrayBuffer(perUser * dimensions * Float32Array.BYTES_PER_ELEMENT);
  const encoded = Array.from({ length: perUser }, (_, seq) =>
    encodeVector(randomUnitVector(new Float32Array(shared, seq * dimensions * Float32Array.BYTES_PER_ELEMENT, dimensions), gaussian)),
  );
  const builtIndex = `${options.dataDir}.index-build.hnsw`;
  // The server sizes a fresh index at twice the count (openVectorIndex); the saved file keeps that capacity.
  const capacity = Math.max(1024, perUser * 2);
  const build = buildIndexOnWorker({ vectors: shared, count: perUser, dimensions, capacity, m: HNSW_M, efConstruction: BENCH_EF_CONSTRUCTION, file: builtIndex });
  build.catch(() => undefined); // awaited below; a failure must not surface as an unhandled rejection meanwhile

  const users = Array.from({ length: options.users }, (_, u) => `scale-user-${u}`);
  const createdAt = new Date().toISOString();
  let pending: StoredRecord[] = [];
  for (const userId of users) {
    for (let seq = 0; seq < perUser; seq++) {
      const turn = options.texts[Math.floor(random() * options.texts.length)];
      pending.push(syntheticRecord({ userId, seq, memories: perUser, turn, vec: encoded[seq], model: embedder.modelId, createdAt, requestPrefix: 'scale' }));
      if (pending.length >= APPEND_RECORDS || seq === perUser - 1) {
        await store.append(userId, pending);
        pending = [];
      }
    }
  }
  const recordsMs = performance.now() - started;

  await build;
  for (const userId of users) {
    await writeVectorIndexCache(store, userId, (temp) => copyFile(builtIndex, temp), {
      model: embedder.modelId,
      dimensions,
      analyzer: ANALYZER_VERSION,
      complete: true,
      max_seq: perUser - 1,
    });
  }
  await rm(builtIndex, { force: true });
  // The vector sidecars, as the server leaves them after its first load: written by the server's own code.
  for (const userId of users) await store.loadUnits(userId);
  await store.sidecarsSettled();
  return {
    memories: options.memories,
    users,
    dimensions,
    model: embedder.modelId,
    records_s: round(recordsMs / 1000, 1),
    total_s: round((performance.now() - started) / 1000, 1),
  };
}

/**
 * The stored line of memory `seq` of a user of `memories`, as an Add of 20 messages in sessions of
 * 40 leaves it (`batch` marks the Add whole); sessions three days apart from 2022-01-01.
 */
export function syntheticRecord(entry: { userId: string; seq: number; memories: number; turn: Turn; vec: string; model: string; createdAt: string; requestPrefix: string }): StoredRecord {
  const { seq } = entry;
  const add = Math.floor(seq / MESSAGES_PER_ADD);
  const session = Math.floor(add / ADDS_PER_SESSION);
  // With its features, as the service's own writes store them (src/memory/unit-features.ts).
  return withStoredFeatures({
    id: randomUUID(),
    user_id: entry.userId,
    text: entry.turn.content,
    tags: [],
    importance: 0.5,
    source: 'add',
    created_at: entry.createdAt,
    session_id: `session_${session + 1}`,
    role: entry.turn.speaker,
    occurred_at: new Date(Date.UTC(2022, 0, 1) + session * 3 * DAY_MS).toISOString(),
    request_id: `${entry.requestPrefix}/${entry.userId}/${add}`,
    message_index: seq % MESSAGES_PER_ADD,
    seq,
    batch: Math.min(MESSAGES_PER_ADD, entry.memories - add * MESSAGES_PER_ADD),
    vec: entry.vec,
    model: entry.model,
  });
}

/** hnswlib builds on the calling thread: a worker keeps the main thread free to write the records. */
export function buildIndexOnWorker(request: BuildRequest): Promise<void> {
  const worker = new Worker(new URL('./hnsw-build-worker.js', import.meta.url));
  return new Promise<void>((resolve, reject) => {
    worker.once('message', (reply: BuildReply) => (reply.error ? reject(new Error(`index build failed: ${reply.error}`)) : resolve()));
    worker.once('error', reject);
    worker.once('exit', (code) => reject(new Error(`index build worker exited (${code})`)));
    worker.postMessage(request);
  }).finally(() => worker.terminate());
}

/** Removes the index caches, so the next start rebuilds them from the JSONL (a lost or stale cache). */
export async function removeIndexCaches(dataDir: string, users: readonly string[]): Promise<void> {
  const store = new JsonlStore(dataDir, silentLogger());
  for (const userId of users) {
    await store.removeCacheFile(userId, VECTOR_INDEX_FILE);
    await store.removeCacheFile(userId, VECTOR_INDEX_META_FILE);
  }
}

/** Fills `vector` with a uniformly random direction. */
export function randomUnitVector(vector: Float32Array, gaussian: () => number): Float32Array {
  const dimensions = vector.length;
  let squares = 0;
  for (let i = 0; i < dimensions; i++) {
    const value = gaussian();
    vector[i] = value;
    squares += value * value;
  }
  const norm = Math.sqrt(squares);
  for (let i = 0; i < dimensions; i++) vector[i] /= norm;
  return vector;
}

/** Standard normal draws (Box-Muller): uniform directions once normalised. */
export function gaussianSource(random: () => number): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const value = spare;
      spare = null;
      return value;
    }
    const radius = Math.sqrt(-2 * Math.log(1 - random()));
    const angle = 2 * Math.PI * random();
    spare = radius * Math.sin(angle);
    return radius * Math.cos(angle);
  };
}
