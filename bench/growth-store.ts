import { copyFile, readdir, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { silentLogger } from '../src/logger.js';
import { ANALYZER_VERSION } from '../src/retrieval/analyzer.js';
import { HNSW_M } from '../src/retrieval/vector-index.js';
import { JsonlStore } from '../src/store/jsonl-store.js';
import { writeVectorIndexCache } from '../src/store/vector-index-cache.js';
import { encodeVector, type StoredRecord } from '../src/store/stored-record.js';
import { round } from './http-load.js';
import { buildIndexOnWorker, gaussianSource, randomUnitVector, syntheticRecord } from './scale-store.js';
import { serverEncoder } from './server-encoder.js';
import { mulberry32, type Turn } from './workload.js';

/**
 * One user of N memories written straight into the data directory's own format, as
 * `scale-store.ts` writes its users: StoredRecord lines of real texts (recombined) through the
 * service's own JsonlStore, random unit vectors of the real model's dimension and id, Adds of 20
 * messages in sessions of 40, and the user's HNSW cache built on a worker thread with the server's
 * M and a low efConstruction (a file's size and load time depend on M and the count, not on the
 * graph's quality). Unlike the scale stores, every vector is written as it is drawn (a million
 * base64 strings held at once would not fit the heap); the float32 slab the graph is built from is
 * shared with the worker. The vector sidecar is left to the server's first load, which writes it
 * in the background after its first answer; the bench's warm start reads it.
 */

/** As the scale stores: the graph's file and load time follow M and the count, not its quality. */
const BENCH_EF_CONSTRUCTION = 16;
const APPEND_RECORDS = 2000;

export interface GrowthStoreOptions {
  dataDir: string;
  userId: string;
  memories: number;
  texts: readonly Turn[];
  seed: number;
}

export interface GrowthStore {
  userId: string;
  memories: number;
  dimensions: number;
  model: string;
  records_s: number;
  total_s: number;
}

export async function writeGrowthStore(options: GrowthStoreOptions): Promise<GrowthStore> {
  const started = performance.now();
  const { memories, userId } = options;
  const embedder = serverEncoder(); // id and dimension only: the model is not loaded
  const dimensions = embedder.dimensions;
  const store = new JsonlStore(options.dataDir, silentLogger());
  await store.init();
  const random = mulberry32(options.seed);
  const gaussian = gaussianSource(random);
  const shared = new SharedArrayBuffer(memories * dimensions * Float32Array.BYTES_PER_ELEMENT);
  const slab = new Float32Array(shared);
  const createdAt = new Date().toISOString();
  const builtIndex = `${options.dataDir}.index-build.hnsw`;
  let pending: StoredRecord[] = [];
  // The graph is built once the vectors exist; the records are written meanwhile.
  for (let seq = 0; seq < memories; seq++) randomUnitVector(slab.subarray(seq * dimensions, (seq + 1) * dimensions), gaussian);
  const build = buildIndexOnWorker({ vectors: shared, count: memories, dimensions, capacity: Math.max(1024, memories * 2), m: HNSW_M, efConstruction: BENCH_EF_CONSTRUCTION, file: builtIndex });
  build.catch(() => undefined); // awaited below
  for (let seq = 0; seq < memories; seq++) {
    const turn = options.texts[Math.floor(random() * options.texts.length)];
    const vec = encodeVector(slab.subarray(seq * dimensions, (seq + 1) * dimensions));
    pending.push(syntheticRecord({ userId, seq, memories, turn, vec, model: embedder.modelId, createdAt, requestPrefix: 'growth' }));
    if (pending.length >= APPEND_RECORDS || seq === memories - 1) {
      await store.append(userId, pending);
      pending = [];
    }
  }
  const recordsMs = performance.now() - started;
  await build;
  await writeVectorIndexCache(store, userId, (temp) => copyIndex(builtIndex, temp), {
    model: embedder.modelId,
    dimensions,
    analyzer: ANALYZER_VERSION,
    complete: true,
    max_seq: memories - 1,
  });
  await rm(builtIndex, { force: true });
  return { userId, memories, dimensions, model: embedder.modelId, records_s: round(recordsMs / 1000, 1), total_s: round((performance.now() - started) / 1000, 1) };
}

/** A rename when possible (the graph of a million vectors is 2 GB), else a copy. */
async function copyIndex(from: string, to: string): Promise<void> {
  await rename(from, to).catch(() => copyFile(from, to));
}

/** Bytes of the user's files (JSONL, sidecar, graph). */
export async function userFileBytes(dataDir: string): Promise<number> {
  let total = 0;
  for (const entry of await readdir(dataDir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) total += (await stat(path.join(entry.parentPath, entry.name))).size;
  }
  return total;
}
