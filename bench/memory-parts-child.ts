/**
 * One measurement of bench/memory-parts.ts, in a process of its own (so that its baseline is
 * clean and `MALLOC_ARENA_MAX` can differ between runs):
 *
 *   node --expose-gc dist/bench/memory-parts-child.js <dataDir> <userId> total|parts
 *
 * Opens a MemoryService on the JSONL data directory with a stand-in encoder (the figure is
 * memory, not the model), measures its baseline, loads the user by a Search (as a request does:
 * records, corpus, int8 slab and, past the exhaustive limit, the HNSW graph read from its cache),
 * and measures again after a forced GC. `parts` then builds each part of the JS heap once more
 * beside the loaded user, from its own records, and measures what each adds (records, corpus
 * units, BM25 postings, entity index), then reads the user's graph file once more into a bare
 * VectorIndex (hnswlib's native memory, by RSS). Prints one JSON object on stdout.
 */
import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Embedder } from '../src/embedding/embedder.js';
import { silentLogger } from '../src/logger.js';
import { compactRecord } from '../src/memory/memory-records.js';
import { corpusUnit } from '../src/memory/corpus-units.js';
import { MemoryService } from '../src/memory/memory-service.js';
import type { UserCache } from '../src/memory/user-cache.js';
import { openStore } from '../src/open-service.js';
import { Bm25Index } from '../src/retrieval/bm25-index.js';
import { EntityIndex } from '../src/retrieval/entities/entity-index.js';
import { VectorIndex } from '../src/retrieval/vector-index.js';
import { VECTOR_INDEX_FILE } from '../src/store/vector-index-cache.js';
import type { StoredRecord } from '../src/store/stored-record.js';
import type { CorpusUnit } from '../src/retrieval/corpus/corpus-types.js';
import type { UserCorpus } from '../src/retrieval/corpus/user-corpus.js';
import { gaussianSource, randomUnitVector } from './scale-store.js';
import { serverEncoder } from './server-encoder.js';
import { mulberry32 } from './workload.js';

export interface Usage {
  rss: number;
  heap_used: number;
  heap_total: number;
  array_buffers: number;
  external: number;
}

/** Bytes each part adds, measured as the difference of two `usage()` figures. */
export interface ChildResult {
  memories: number;
  malloc_arena_max: string | null;
  /** Whether the loaded user holds an HNSW graph and int8 codes (past the exhaustive limit). */
  graph: boolean;
  compact: boolean;
  load_ms: number;
  /**
   * Bytes of the resizable buffers the user's units hold float views of (the load's slab, kept by
   * a user scored exhaustively): Node 20 leaves resizable buffers out of `arrayBuffers`.
   */
  resizable_bytes: number;
  baseline: Usage;
  /** Right after the load and the Searches, before any forced GC: what a server shows. */
  loaded_without_gc: Usage;
  loaded: Usage;
  parts?: {
    records: Usage;
    corpus_units: Usage;
    bm25: Usage;
    entity_index: Usage;
    graph_read: Usage;
    graph_file_bytes: number;
    graph_count: number;
  };
}

const QUERIES = ['what did they talk about last time', 'when did Caroline go to the support group', 'pottery class with the kids', 'what does Melanie like to paint', 'the trip to the beach'];

function usage(): Usage {
  const u = process.memoryUsage();
  return { rss: u.rss, heap_used: u.heapUsed, heap_total: u.heapTotal, array_buffers: u.arrayBuffers, external: u.external };
}

/** Usage after full collections (twice: finalisers of the first free what the second sees). */
function collected(): Usage {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  gc();
  gc();
  return usage();
}

function minus(a: Usage, b: Usage): Usage {
  return { rss: a.rss - b.rss, heap_used: a.heap_used - b.heap_used, heap_total: a.heap_total - b.heap_total, array_buffers: a.array_buffers - b.array_buffers, external: a.external - b.external };
}

async function findFile(dir: string, name: string): Promise<string | null> {
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name === name) return path.join(entry.parentPath, entry.name);
  }
  return null;
}

/** Keeps a value reachable until here (so that a measurement sees it), without the optimiser dropping it. */
let keep: unknown = null;
function hold(value: unknown): void {
  keep = value;
}

/*
 * Each part is built and measured inside a function of its own, sync, so that what it built is
 * garbage once it returns: a value released inside one async function can outlive its last use
 * in a register of the suspended frame (measured: a part's copies freed two stages later).
 */

/** Records as a load leaves them (parsed, repeated strings shared), in two maps as the state holds them. */
function recordsPart(records: readonly StoredRecord[]): Usage {
  const before = collected();
  const strings = new Map<string, string>();
  const copies = records.map((record) => {
    const copy = structuredClone(record) as StoredRecord;
    compactRecord(copy, strings);
    return copy;
  });
  strings.clear();
  hold([new Map(copies.map((copy) => [copy.id, copy])), new Map(copies.map((copy) => [copy.seq, copy]))]);
  const after = collected();
  hold(null);
  return minus(after, before);
}

function corpusUnits(records: readonly StoredRecord[]): CorpusUnit[] {
  const strings = new Map<string, string>();
  return records.map((record) => corpusUnit(record, null, strings));
}

/** Corpus units as a load leaves them: their term lists handed to BM25 and dropped (admitUnits). */
function unitsPart(records: readonly StoredRecord[]): Usage {
  const before = collected();
  const units = corpusUnits(records);
  for (const unit of units) unit.terms = NO_TERMS;
  hold(units);
  const after = collected();
  hold(null);
  return minus(after, before);
}

/**
 * What an index built over the units adds: the units are built first (their term lists kept for
 * BM25, dropped as a load drops them otherwise) and held across the measurement.
 */
function addedBy(records: readonly StoredRecord[], keepTerms: boolean, build: (units: readonly CorpusUnit[]) => unknown): Usage {
  const units = corpusUnits(records);
  if (!keepTerms) for (const unit of units) unit.terms = NO_TERMS;
  hold(units);
  const before = collected();
  hold([units, build(units)]);
  const after = collected();
  hold(null);
  return minus(after, before);
}

/** BM25's slots, postings and term table over the units' terms. */
function bm25Part(records: readonly StoredRecord[]): Usage {
  return addedBy(records, true, (units) => {
    // As a load adds them (UserCorpus.add): in one batch.
    const bm25 = new Bm25Index();
    bm25.addMany(units.map((unit) => ({ key: unit.seq, terms: unit.terms })));
    return bm25;
  });
}

/** The entity index over the units' mentions (the mentions themselves are the units'). */
function entityPart(records: readonly StoredRecord[]): Usage {
  return addedBy(records, false, (units) => {
    const entities = new EntityIndex();
    for (const unit of units) entities.add(unit.seq, unit.entities);
    return entities;
  });
}

/** hnswlib's own memory: the user's graph file read once more into a bare index (native allocations: RSS, not the heap). */
async function graphPart(dataDir: string, dimensions: number): Promise<{ graph_read: Usage; graph_file_bytes: number; graph_count: number }> {
  const file = await findFile(dataDir, VECTOR_INDEX_FILE);
  if (!file) return { graph_read: minus(usage(), usage()), graph_file_bytes: 0, graph_count: 0 };
  const before = collected();
  const index = await VectorIndex.read(file, dimensions);
  hold(index);
  const after = collected();
  return { graph_read: minus(after, before), graph_file_bytes: (await stat(file)).size, graph_count: index.size };
}

const NO_TERMS: readonly string[] = Object.freeze([]);

/** The distinct resizable buffers behind the units' float vectors, in bytes (compact users hold fresh arrays: none). */
function resizableBytes(corpus: UserCorpus, seqs: readonly number[]): number {
  if (corpus.vectorsCompact) return 0;
  const buffers = new Set<ArrayBufferLike>();
  for (const seq of seqs) {
    const buffer = corpus.vectorOf(seq)?.buffer;
    if (buffer && (buffer as { resizable?: boolean }).resizable) buffers.add(buffer);
  }
  let bytes = 0;
  for (const buffer of buffers) bytes += buffer.byteLength;
  return bytes;
}

async function main(): Promise<void> {
  const [dataDir, userId, mode] = process.argv.slice(2);
  if (!dataDir || !userId || (mode !== 'total' && mode !== 'parts')) throw new Error('usage: memory-parts-child.js <dataDir> <userId> total|parts');
  const { modelId, dimensions } = serverEncoder(); // identity only: the model is not loaded
  const gaussian = gaussianSource(mulberry32(7));
  const embedder: Embedder = { modelId, dimensions, ready: async () => {}, close: async () => {}, embed: async (batch) => batch.map(() => randomUnitVector(new Float32Array(dimensions), gaussian)) };
  const service = await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 });
  // The search path's code and the service's own objects are part of the baseline, not of the user.
  await service.search({ userId: 'nobody', query: QUERIES[0], limit: 10 });
  const baseline = collected();
  const started = performance.now();
  await service.search({ userId, query: QUERIES[0], limit: 100 });
  const loadMs = performance.now() - started;
  for (const query of QUERIES) await service.search({ userId, query, limit: 100 });
  const loadedWithoutGc = usage();
  const loaded = collected();
  const state = (service as unknown as { cache: UserCache }).cache.peek(userId);
  if (!state) throw new Error(`user ${userId} not loaded`);
  const result: ChildResult = {
    memories: state.records.size,
    malloc_arena_max: process.env.MALLOC_ARENA_MAX ?? null,
    graph: state.corpus.vectors !== null,
    compact: state.corpus.vectorsCompact,
    load_ms: Math.round(loadMs),
    resizable_bytes: resizableBytes(state.corpus, [...state.records.values()].map((record) => record.seq)),
    baseline,
    loaded_without_gc: loadedWithoutGc,
    loaded,
  };
  if (mode === 'parts') {
    const records = [...state.records.values()];
    const graph = await graphPart(dataDir, dimensions);
    result.parts = { records: recordsPart(records), corpus_units: unitsPart(records), bm25: bm25Part(records), entity_index: entityPart(records), ...graph };
  }
  process.stdout.write(JSON.stringify(result) + '\n');
  await service.close();
  void keep;
}

await main();
