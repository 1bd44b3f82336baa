#!/usr/bin/env node
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_ENCODER_THREADS } from '../src/config.js';
import { createEmbedder } from '../src/embedding/create-embedder.js';
import type { Embedder } from '../src/embedding/embedder.js';
import { HashEmbedder } from '../src/embedding/hash-embedder.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import type { PortableRecord } from '../src/memory/portability.js';
import { openStore } from '../src/open-service.js';
import { encodeVector } from '../src/store/stored-record.js';
import { p50, seeded, sentence } from './synthetic-texts.js';

/**
 * `node dist/bench/multi-user-search.js [--users 4] [--memories 1000] [--rounds 5] [--embedder onnx|hash]`:
 * a MemoryPool search naming several users (issue 27: 4 users of 1,000 memories each within 2x of
 * one such user). Each user is imported on a temporary JSONL data directory; every query is then
 * searched (limit 10, duplicates collapsed, as /mem/search does) over the first user alone and
 * over all of them, the two interleaved per query so that the machine's load falls on both
 * alike. Every query text is new (a round number in it), so the query-vector cache never answers
 * and each search pays for its encoding: with `onnx` (the local encoder, models/use-lite) that is
 * what a server does for a new question; `hash` leaves only the ranking, the worst case for the
 * ratio. Prints both p50s and their ratio. A benchmark: it prints, it never fails.
 */
async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { users: { type: 'string', default: '4' }, memories: { type: 'string', default: '1000' }, rounds: { type: 'string', default: '5' }, embedder: { type: 'string', default: 'onnx' } },
  });
  const users = Array.from({ length: Number(values.users) }, (_, i) => `bench-${i}`);
  const perUser = Number(values.memories);
  const rounds = Number(values.rounds);
  const embedder: Embedder & { close?: () => Promise<void> } =
    values.embedder === 'hash' ? new HashEmbedder({ dimensions: 512 }) : createEmbedder({ embedder: 'onnx', modelDir: path.resolve('models/use-lite'), encoderThreads: DEFAULT_ENCODER_THREADS });
  const dataDir = await mkdtemp(path.join(tmpdir(), 'memorypool-multi-user-bench-'));
  const service = await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 });
  try {
    const random = seeded(27);
    const texts = Array.from({ length: users.length * perUser }, (_, i) => `${sentence(random, 6 + (i % 9))} number ${i}`);
    const vectors = await embedder.embed(texts);
    const records: PortableRecord[] = texts.map((text, i) => ({
      id: `m-${i}`,
      user_id: users[Math.floor(i / perUser)],
      text,
      tags: [],
      importance: 0.5,
      source: 'bench',
      created_at: new Date(Date.parse('2025-01-01T00:00:00Z') + i * 60_000).toISOString(),
      vec: encodeVector(vectors[i]),
      model: embedder.modelId,
    }));
    await service.importRecords(records);
    await service.indexesReady();

    const queries = Array.from({ length: 40 }, () => sentence(random, 4));
    const single: number[] = [];
    const across: number[] = [];
    const request = (query: string) => ({ query, limit: 10, collapseDuplicates: true });
    // One warm-up pass (layouts, JIT, the encoder's first run), then the measured rounds.
    await service.search({ ...request(queries[0]), userId: users[0] });
    await service.searchUsers(users, request(queries[1]));
    for (let round = 0; round < rounds; round++) {
      for (const [i, query] of queries.entries()) {
        // A text neither search has seen: each pays for its own encoding.
        const alone = `${query} round ${round} a`;
        const all = `${query} round ${round} b`;
        const order = i % 2 === 0 ? ['single', 'across'] : ['across', 'single'];
        for (const which of order) {
          const t0 = performance.now();
          if (which === 'single') await service.search({ ...request(alone), userId: users[0] });
          else await service.searchUsers(users, request(all));
          (which === 'single' ? single : across).push(performance.now() - t0);
        }
      }
    }
    const base = p50(single);
    console.log(`multi-user-search: ${users.length} users of ${perUser} memories, ${embedder.modelId} (${values.embedder}), ${queries.length} queries x ${rounds} rounds, limit 10`);
    console.log(`cpu: ${cpus()[0]?.model} x${cpus().length}, load ${loadavg().map((v) => v.toFixed(2)).join(' ')}`);
    console.log(`one user              p50 ${base.toFixed(2).padStart(7)} ms`);
    console.log(`${`${users.length} users at once`.padEnd(21)} p50 ${p50(across).toFixed(2).padStart(7)} ms   ratio ${(p50(across) / base).toFixed(2)}`);
  } finally {
    await service.close();
    await embedder.close?.();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
