/**
 * What writing a change event costs an Add (issue 28: at most 5% of an Add's p50).
 *
 * The feed cannot be turned off: every store write records its events. So the run compares, in
 * one process and alternating Add by Add, two services on two scratch data directories that
 * differ in one thing: in the second, the store's event append (`ChangeLog.append`: the feed's
 * lock, the tail check, the write and its fsync) is replaced by a no-op. Everything else, the
 * embedding, the user's lock, the memory's own append and fsync, the cache update, is the same
 * code. Printed: the p50 (and p90) of each, and their ratio.
 *
 *   node --import tsx bench/change-feed-cost.ts [--adds 400] [--embedder onnx|hash]
 *
 * With the real encoder (onnx, the default) the ratio is what a user's Add sees; with the hash
 * embedder the Add is almost only the store write, so its ratio bounds the feed's share from above.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';
import { createEmbedder } from '../src/embedding/create-embedder.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import { JsonlMemoryStore } from '../src/store/jsonl-memory-store.js';

function option(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 ? process.argv[at + 1] : fallback;
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

const round = (value: number, digits = 3) => Number(value.toFixed(digits));

async function main(): Promise<void> {
  const adds = Number(option('adds', '400'));
  const embedderKind = option('embedder', 'onnx') as 'onnx' | 'hash';
  const dirs = [await mkdtemp(path.join(os.tmpdir(), 'feed-on-')), await mkdtemp(path.join(os.tmpdir(), 'feed-off-'))];
  const embedder = createEmbedder(loadConfig({ embedder: embedderKind, dataDir: dirs[0] }));
  const logger = silentLogger();
  const withFeed = new JsonlMemoryStore(dirs[0], logger);
  const withoutFeed = new JsonlMemoryStore(dirs[1], logger);
  // The one difference: no event written.
  withoutFeed.changes.append = async () => [];
  const services = [
    await MemoryService.open({ store: withFeed, embedder, logger, preload: false, indexFlushDelayMs: 0 }),
    await MemoryService.open({ store: withoutFeed, embedder, logger, preload: false, indexFlushDelayMs: 0 }),
  ];
  const times: number[][] = [[], []];
  try {
    // Warm-up: the encoder, the users' folders, the feed's file.
    for (let i = 0; i < 20; i++) for (const service of services) await service.addMemory({ userId: `user-${i % 4}`, text: `warm-up note ${i} about the kettle` });
    for (let i = 0; i < adds; i++) {
      // Alternating which goes first, so that neither always runs on a cache the other warmed.
      for (const which of i % 2 ? [1, 0] : [0, 1]) {
        const started = performance.now();
        await services[which].addMemory({ userId: `user-${i % 4}`, text: `note ${i}: the meeting with Ann moved to Thursday at ${i % 24}:00` });
        times[which].push(performance.now() - started);
      }
    }
    const [on, off] = times;
    const lastSeq = await withFeed.lastChangeSeq();
    const summary = {
      adds_each: adds,
      embedder: embedder.modelId,
      cpu: os.cpus()[0]?.model ?? 'unknown',
      cores: os.availableParallelism(),
      events_written: lastSeq,
      with_feed: { p50_ms: round(percentile(on, 50)), p90_ms: round(percentile(on, 90)) },
      without_feed: { p50_ms: round(percentile(off, 50)), p90_ms: round(percentile(off, 90)) },
      p50_ratio: round(percentile(on, 50) / percentile(off, 50)),
      target: 'p50_ratio <= 1.05',
    };
    process.stdout.write(JSON.stringify(summary, null, 2) + '\n');
  } finally {
    for (const service of services) await service.close();
    await embedder.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
}

await main();
