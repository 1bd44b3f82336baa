/**
 * Memory per memory, part by part (issue 29, item 3): one user of N memories (the growth bench's
 * store: LoCoMo texts, random unit vectors, the server's model id, its HNSW cache), loaded into a
 * MemoryService in a process of its own (bench/memory-parts-child.ts), and what each part adds
 * per extra memory between consecutive sizes, measured: the V8 heap after a forced GC (split into
 * records, corpus units, BM25 postings, entity index and the rest), array buffers (the int8 slab),
 * hnswlib's native memory (RSS across reading the graph once more, against its file size), and
 * the RSS left over (V8's free heap space, malloc arenas, fragmentation), also with
 * `MALLOC_ARENA_MAX=2`.
 *
 *   npm run build && npm run bench -- --memory-parts [--sizes 10000,100000] [--out <dir>]
 *   node dist/bench/memory-parts.js [--sizes 10000,100000] [--stores <dir>] [--out <dir>]
 *
 * Prints the table on stderr and writes `<dir>/bench-memory-parts.json`. A figure, never a test.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { promisify } from 'node:util';
import { writeGrowthStore } from './growth-store.js';
import { round } from './http-load.js';
import type { ChildResult, Usage } from './memory-parts-child.js';
import { serverEncoder } from './server-encoder.js';
import { DEFAULT_LOCOMO, loadWorkload, type Workload } from './workload.js';

export const MEMORY_PARTS_SIZES = [10_000, 100_000] as const;
/** RSS per extra memory the issue asks for (bench/README.md, `growth_rss_per_memory`). */
export const TARGET_BYTES_PER_MEMORY = 2_560;
/** The growth bench's store names and user, so that a `--stores` folder serves both. */
const USER_ID = 'growth-user';
const CHILD = fileURLToPath(new URL('./memory-parts-child.js', import.meta.url));
const run = promisify(execFile);

export interface MemoryPartsOptions {
  workDir: string;
  workload: Workload;
  sizes: readonly number[];
  /** Stores kept there between runs (written when missing); default: written in `workDir`, removed once measured. */
  storesDir?: string;
  progress: (message: string) => void;
}

interface SizeRun {
  memories: number;
  /** The first load (JSONL decoded, the vector sidecar written), then the measured one (the sidecar read), then with MALLOC_ARENA_MAX=2. */
  cold: ChildResult;
  parts: ChildResult;
  arena2: ChildResult;
}

async function child(dataDir: string, mode: 'total' | 'parts', env: Record<string, string> = {}): Promise<ChildResult> {
  const { stdout } = await run(process.execPath, ['--expose-gc', CHILD, dataDir, USER_ID, mode], { env: { ...process.env, ...env }, maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as ChildResult;
}

/** The measured components of one run, in bytes over the process's baseline. */
function components(result: ChildResult) {
  // Resizable buffers (the load's float slab while a user keeps it) are not in `arrayBuffers`: added here.
  const over = (u: Usage, base: Usage) => ({ rss: u.rss - base.rss, heap: u.heap_used - base.heap_used, heapTotal: u.heap_total - base.heap_total, buffers: u.array_buffers - base.array_buffers + result.resizable_bytes });
  const loaded = over(result.loaded, result.baseline);
  const parts = result.parts!;
  // hnswlib's allocations are outside V8: the RSS the read added beyond the JS objects it made (the label sets).
  const hnswlib = result.graph ? parts.graph_read.rss - Math.max(0, parts.graph_read.heap_total) : 0;
  const heapParts = parts.records.heap_used + parts.corpus_units.heap_used + parts.bm25.heap_used + parts.entity_index.heap_used;
  return {
    rss_without_gc: result.loaded_without_gc.rss - result.baseline.rss,
    rss: loaded.rss,
    heap: loaded.heap,
    heap_records: parts.records.heap_used,
    heap_corpus_units: parts.corpus_units.heap_used,
    heap_bm25: parts.bm25.heap_used,
    heap_entity_index: parts.entity_index.heap_used,
    heap_rest: loaded.heap - heapParts,
    array_buffers: loaded.buffers,
    array_buffers_bm25: parts.bm25.array_buffers,
    hnswlib,
    v8_free_space: loaded.heapTotal - loaded.heap,
    malloc_slack: loaded.rss - loaded.heapTotal - loaded.buffers - hnswlib,
  };
}

type Components = ReturnType<typeof components>;

const LABELS: Record<keyof Components, string> = {
  rss_without_gc: 'RSS right after the load (no forced GC)',
  rss: 'RSS after a forced GC',
  heap: 'V8 heap (used, after GC)',
  heap_records: '  records, their strings, two maps',
  heap_corpus_units: '  corpus units (cue fields, mentions)',
  heap_bm25: '  BM25 term table (its lists: array buffers)',
  heap_entity_index: '  entity index',
  heap_rest: '  rest (links, sessions, slot layout, label sets)',
  array_buffers: 'array buffers (int8 slab, BM25 lists; the float slab at 10k)',
  array_buffers_bm25: "  BM25's postings and slots' term lists",
  hnswlib: "hnswlib's native memory (graph read)",
  v8_free_space: "V8's committed but free heap",
  malloc_slack: 'malloc slack (RSS − heap − buffers − hnswlib)',
};

export async function measureMemoryParts(options: MemoryPartsOptions) {
  const { progress } = options;
  const texts = options.workload.conversations.flatMap((conversation) => conversation.turns);
  const runs: SizeRun[] = [];
  for (const memories of options.sizes) {
    const dataDir = path.join(options.storesDir ?? options.workDir, `growth-${memories}`);
    const marker = `${dataDir}.written`;
    if (options.storesDir === undefined || !existsSync(marker)) {
      await rm(dataDir, { recursive: true, force: true });
      progress(`memory parts ${memories}: writing one user of ${memories} memories and its index cache`);
      const store = await writeGrowthStore({ dataDir, userId: USER_ID, memories, texts, seed: 20 + memories });
      progress(`memory parts ${memories}: written in ${store.total_s} s`);
      if (options.storesDir !== undefined) await writeFile(marker, `${JSON.stringify(store)}\n`);
    }
    const cold = await child(dataDir, 'total');
    progress(`memory parts ${memories}: first load ${cold.load_ms} ms; measuring the parts`);
    const parts = await child(dataDir, 'parts');
    const arena2 = await child(dataDir, 'total', { MALLOC_ARENA_MAX: '2' });
    progress(`memory parts ${memories}: load ${parts.load_ms} ms, RSS +${round((parts.loaded.rss - parts.baseline.rss) / 2 ** 20, 1)} MiB (MALLOC_ARENA_MAX=2: +${round((arena2.loaded.rss - arena2.baseline.rss) / 2 ** 20, 1)} MiB)`);
    runs.push({ memories, cold, parts, arena2 });
    if (options.storesDir === undefined) await rm(dataDir, { recursive: true, force: true });
  }
  return summarize(runs);
}

function summarize(runs: SizeRun[]) {
  const sizes = runs.map((entry) => {
    const c = components(entry.parts);
    const parts = entry.parts.parts!;
    return {
      memories: entry.memories,
      graph: entry.parts.graph,
      compact: entry.parts.compact,
      load_ms: entry.parts.load_ms,
      first_load_ms: entry.cold.load_ms,
      bytes: c,
      bytes_per_memory: Object.fromEntries(Object.entries(c).map(([key, value]) => [key, Math.round(value / entry.memories)])),
      rss_arena_max_2: entry.arena2.loaded.rss - entry.arena2.baseline.rss,
      rss_arena_max_2_without_gc: entry.arena2.loaded_without_gc.rss - entry.arena2.baseline.rss,
      graph_file_bytes_per_memory: parts.graph_count > 0 ? round(parts.graph_file_bytes / parts.graph_count, 1) : null,
      hnswlib_rss_per_memory: parts.graph_count > 0 ? Math.round(c.hnswlib / parts.graph_count) : null,
      raw: entry.parts,
    };
  });
  const steps = [];
  for (let i = 1; i < sizes.length; i++) {
    const from = sizes[i - 1];
    const to = sizes[i];
    const extra = to.memories - from.memories;
    const per = Object.fromEntries(Object.keys(LABELS).map((key) => [key, Math.round((to.bytes[key as keyof Components] - from.bytes[key as keyof Components]) / extra)])) as Record<keyof Components, number>;
    const arena2 = Math.round((to.rss_arena_max_2 - from.rss_arena_max_2) / extra);
    const arena2WithoutGc = Math.round((to.rss_arena_max_2_without_gc - from.rss_arena_max_2_without_gc) / extra);
    // The design the statement weighs: an HNSW graph that walks the int8 slab (already held) instead of a float copy of its own.
    const floatCopy = to.graph ? 4 * serverEncoder().dimensions : 0;
    steps.push({
      from: from.memories,
      to: to.memories,
      bytes_per_extra_memory: per,
      rss_arena_max_2: arena2,
      rss_arena_max_2_without_gc: arena2WithoutGc,
      ratio_to_target: round(per.rss / TARGET_BYTES_PER_MEMORY, 2),
      over_target_bytes: per.rss - TARGET_BYTES_PER_MEMORY,
      without_graph_float_copy_estimate: floatCopy > 0 ? per.rss - floatCopy : null,
    });
  }
  const table: string[] = [];
  for (const step of steps) {
    table.push(`memory per extra memory, ${step.from} → ${step.to} memories in one user (bytes):`);
    for (const [key, label] of Object.entries(LABELS)) table.push(`  ${label.padEnd(50)} ${String(step.bytes_per_extra_memory[key as keyof Components]).padStart(7)}`);
    table.push(`  ${'RSS after GC with MALLOC_ARENA_MAX=2'.padEnd(50)} ${String(step.rss_arena_max_2).padStart(7)}`);
    table.push(`  target ${TARGET_BYTES_PER_MEMORY}: RSS after GC is ${step.ratio_to_target} × the target (${step.over_target_bytes >= 0 ? `misses by ${step.over_target_bytes}` : `meets it with ${-step.over_target_bytes} to spare`})`);
    if (step.without_graph_float_copy_estimate !== null) table.push(`  without hnswlib's float copy (a graph reading the int8 slab), estimated: ${step.without_graph_float_copy_estimate} (${round(step.without_graph_float_copy_estimate / TARGET_BYTES_PER_MEMORY, 2)} × the target)`);
  }
  for (const size of sizes) {
    if (size.graph_file_bytes_per_memory !== null) table.push(`graph at ${size.memories}: file ${size.graph_file_bytes_per_memory} B a memory (4·512 + 132 links + 8 label = 2188 at level 0), hnswlib RSS ${size.hnswlib_rss_per_memory} B a memory`);
  }
  return { sizes, steps, table, target_bytes_per_memory: TARGET_BYTES_PER_MEMORY };
}

// ---------------------------------------------------------------------------------------------
// On its own

async function standalone(): Promise<void> {
  const { values } = parseArgs({ options: { sizes: { type: 'string' }, stores: { type: 'string' }, out: { type: 'string' } } });
  const sizes = parseSizes(values.sizes);
  const started = performance.now();
  const progress = (message: string) => process.stderr.write(`[memory-parts ${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${message}\n`);
  const outDir = path.resolve(values.out ?? path.join(fileURLToPath(new URL('../..', import.meta.url)), '.bench-out'));
  await mkdir(outDir, { recursive: true });
  const workDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-memory-parts-'));
  try {
    const storesDir = values.stores === undefined ? undefined : path.resolve(values.stores);
    if (storesDir) await mkdir(storesDir, { recursive: true });
    const result = await measureMemoryParts({ workDir, storesDir, workload: await loadWorkload(DEFAULT_LOCOMO), sizes, progress });
    const summary = { bench: 'memorypool-memory-parts', cpu_model: os.cpus()[0]?.model, node: process.version, load_avg_at_end: os.loadavg(), ...result };
    await writeFile(path.join(outDir, 'bench-memory-parts.json'), JSON.stringify(summary, null, 2) + '\n');
    for (const line of result.table) progress(line);
    progress(`wrote ${path.join(outDir, 'bench-memory-parts.json')}`);
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/** `--sizes 10000,100000`: two or more increasing sizes (the figures are per extra memory between them). */
export function parseSizes(text: string | undefined): number[] {
  const sizes = text === undefined ? [...MEMORY_PARTS_SIZES] : text.split(',').map(Number);
  if (sizes.length < 2 || sizes.some((size, i) => !Number.isInteger(size) || size < 1 || (i > 0 && size <= sizes[i - 1]))) {
    throw new Error(`--sizes: expected two or more increasing positive integers, got ${text}`);
  }
  return sizes;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  standalone().catch((error: Error) => {
    process.stderr.write(`memory-parts bench failed: ${error.stack ?? error.message}\n`);
    process.exit(1);
  });
}
