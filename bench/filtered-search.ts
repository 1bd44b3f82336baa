#!/usr/bin/env node
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { HashEmbedder } from '../src/embedding/hash-embedder.js';
import { encodeVector } from '../src/store/stored-record.js';
import { p50, seeded, sentence } from './synthetic-texts.js';
import { MemoryService } from '../src/memory/memory-service.js';
import type { PortableRecord } from '../src/memory/portability.js';
import { silentLogger } from '../src/logger.js';
import { openStore } from '../src/open-service.js';
import type { MemoryFilter } from '../src/domain/memory.js';
import type { WhereNode } from '../src/domain/where.js';
import { parseWhere } from '../src/protocol/where-expression.js';

/**
 * `node dist/bench/filtered-search.js [--memories 20000] [--rounds 5] [--dimensions 512]`: what a
 * filtered MemoryPool search costs next to an unfiltered one over one large user (issue 16: within
 * 2x). One user of N memories (metadata `project` among 10 values, a `rare` flag on 1%, times
 * spread over two years) is imported on a temporary JSONL data directory with the hash embedder;
 * then every query is searched (limit 10, duplicates collapsed, as /mem/search does) without a
 * filter and with each filter, the variants interleaved per query so that the machine's load
 * falls on all of them alike. Prints each variant's p50 and its ratio to the unfiltered p50.
 * A benchmark: it prints, it never fails.
 */
function whereNode(expression: unknown): WhereNode {
  const parsed = parseWhere(expression);
  if (!parsed.ok) throw new Error(`${parsed.place}: ${parsed.message}`);
  return parsed.node;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { memories: { type: 'string', default: '20000' }, rounds: { type: 'string', default: '5' }, dimensions: { type: 'string', default: '512' } } });
  const count = Number(values.memories);
  const rounds = Number(values.rounds);
  const embedder = new HashEmbedder({ dimensions: Number(values.dimensions) });
  const dataDir = await mkdtemp(path.join(tmpdir(), 'memorypool-filtered-bench-'));
  const service = await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 });
  try {
    const random = seeded(16);
    const start = Date.parse('2024-01-01T00:00:00Z');
    const span = 2 * 365 * 86_400_000;
    const texts = Array.from({ length: count }, (_, i) => `${sentence(random, 6 + (i % 9))} number ${i}`);
    const vectors = await embedder.embed(texts);
    const records: PortableRecord[] = texts.map((text, i) => ({
      id: `m-${i}`,
      user_id: 'bench',
      text,
      tags: i % 4 === 0 ? ['ops'] : [],
      importance: 0.5,
      source: 'bench',
      created_at: new Date(start + Math.floor((i / count) * span)).toISOString(),
      metadata: { project: `p${i % 10}`, ...(i % 100 === 7 ? { rare: true } : {}) },
      agent_id: i % 5 === 0 ? 'planner' : 'coder',
      vec: encodeVector(vectors[i]),
      model: embedder.modelId,
    }));
    const loadStart = performance.now();
    await service.importRecords(records);
    await service.indexesReady();
    const loadMs = performance.now() - loadStart;

    const variants: Array<[string, MemoryFilter | undefined]> = [
      ['unfiltered', undefined],
      ['meta.project=p3 (10%)', { metadata: { project: 'p3' } }],
      ['meta.rare=true (1%)', { metadata: { rare: 'true' } }],
      ['since/until (one quarter of the span)', { sinceMs: start + span / 4, untilMs: start + span / 2 }],
      ['since the first memory (100%: the worst case)', { sinceMs: start }],
      ['tag=ops + meta.project=p4 + since (about 1%)', { tag: 'ops', metadata: { project: 'p4' }, sinceMs: start + span / 2 }],
      ['agent_id=planner (20%)', { agentId: 'planner' }],
      ['where $or project p1/rare, not ops (about 8%)', { where: whereNode({ $or: [{ 'metadata.project': 'p1' }, { 'metadata.rare': true }], $not: { tags: 'ops' } }) }],
      ['where created_at window and importance (25%)', { where: whereNode({ created_at: { $gte: start + span / 4, $lt: start + span / 2 }, importance: { $lte: 0.5 } }) }],
    ];
    const queries = Array.from({ length: 40 }, () => sentence(random, 4));
    const times = new Map(variants.map(([name]) => [name, [] as number[]]));
    const hitCounts = new Map(variants.map(([name]) => [name, 0]));
    // One warm-up pass (layouts, JIT), then the measured rounds.
    for (const [, filter] of variants) await service.search({ userId: 'bench', query: queries[0], limit: 10, filter, collapseDuplicates: true });
    for (let round = 0; round < rounds; round++) {
      for (const query of queries) {
        for (const [name, filter] of variants) {
          const t0 = performance.now();
          const hits = await service.search({ userId: 'bench', query, limit: 10, filter, collapseDuplicates: true });
          times.get(name)!.push(performance.now() - t0);
          hitCounts.set(name, hitCounts.get(name)! + hits.length);
        }
      }
    }
    const base = p50(times.get('unfiltered')!);
    console.log(`filtered-search: ${count} memories in one user, ${embedder.dimensions} dimensions (hash embedder), ${queries.length} queries x ${rounds} rounds, limit 10`);
    console.log(`cpu: ${cpus()[0]?.model} x${cpus().length}, load ${loadavg().map((v) => v.toFixed(2)).join(' ')}; import + index ${(loadMs / 1000).toFixed(1)} s`);
    for (const [name] of variants) {
      const median = p50(times.get(name)!);
      const meanHits = hitCounts.get(name)! / times.get(name)!.length;
      console.log(`${name.padEnd(46)} p50 ${median.toFixed(2).padStart(7)} ms   ratio ${(median / base).toFixed(2)}   hits/search ${meanHits.toFixed(1)}`);
    }
  } finally {
    await service.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
