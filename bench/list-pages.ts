#!/usr/bin/env node
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { HashEmbedder } from '../src/embedding/hash-embedder.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import type { PortableRecord } from '../src/memory/portability.js';
import { openStore } from '../src/open-service.js';
import { encodeVector } from '../src/store/stored-record.js';

/**
 * `node dist/bench/list-pages.js [--memories 100000] [--page 1000] [--rounds 3] [--dimensions 64]`:
 * walking every memory of one user page by page (the service's listPage, each page serialised as
 * POST /mem/list answers it) against reading them as `memorypool export` does (exportRecords, one
 * JSON line each), on a temporary JSONL data directory with the hash embedder (issue 27: within
 * 2x). The two alternate per round so the machine's load falls on both alike; prints each p50 and
 * the ratio. A benchmark: it prints, it never fails.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({ options: { memories: { type: 'string', default: '100000' }, page: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '3' }, dimensions: { type: 'string', default: '64' } } });
  const count = Number(values.memories);
  const pageSize = Number(values.page);
  const rounds = Number(values.rounds);
  const embedder = new HashEmbedder({ dimensions: Number(values.dimensions) });
  const dataDir = await mkdtemp(path.join(tmpdir(), 'memorypool-pages-bench-'));
  const service = await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 });
  try {
    const texts = Array.from({ length: count }, (_, i) => `memory number ${i} about the harbour and the ${i % 97} lanterns`);
    const vectors = await embedder.embed(texts);
    const records: PortableRecord[] = texts.map((text, i) => ({
      id: `m-${i}`,
      user_id: 'bench',
      text,
      tags: i % 3 === 0 ? ['t'] : [],
      importance: 0.5,
      source: 'bench',
      created_at: new Date(Date.UTC(2025, 0, 1) + i * 1000).toISOString(),
      agent_id: `agent-${i % 4}`,
      vec: encodeVector(vectors[i]),
      model: embedder.modelId,
    }));
    await service.importRecords(records);
    const walk = async (): Promise<number> => {
      let bytes = 0;
      let cursor: string | undefined;
      do {
        const page = await service.listPage({ userId: 'bench', limit: pageSize, cursor });
        bytes += JSON.stringify({ memories: page.memories, next_cursor: page.nextCursor }).length;
        cursor = page.nextCursor ?? undefined;
      } while (cursor !== undefined);
      return bytes;
    };
    const exportAll = async (): Promise<number> => {
      let bytes = 0;
      for (const record of await service.exportRecords('bench')) bytes += JSON.stringify(record).length + 1;
      return bytes;
    };
    await walk();
    await exportAll();
    const times = { walk: [] as number[], export: [] as number[] };
    for (let round = 0; round < rounds; round++) {
      for (const [name, run] of [['walk', walk], ['export', exportAll]] as const) {
        const t0 = performance.now();
        await run();
        times[name].push(performance.now() - t0);
      }
    }
    const p50 = (list: number[]) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
    console.log(`list-pages: ${count} memories in one user, pages of ${pageSize}, ${embedder.dimensions} dimensions (hash embedder), ${rounds} rounds`);
    console.log(`cpu: ${cpus()[0]?.model} x${cpus().length}, load ${loadavg().map((v) => v.toFixed(2)).join(' ')}`);
    console.log(`walk every page   p50 ${p50(times.walk).toFixed(0).padStart(6)} ms`);
    console.log(`export (as memorypool export) p50 ${p50(times.export).toFixed(0).padStart(6)} ms`);
    console.log(`ratio walk / export ${(p50(times.walk) / p50(times.export)).toFixed(2)}`);
  } finally {
    await service.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
