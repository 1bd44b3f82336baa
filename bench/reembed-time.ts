/**
 * How long a model switch takes to re-embed stored memories in the background: N memories
 * (LoCoMo turns, spread over U users) written into a temporary JSONL data directory as if by
 * the `--from` build of USE-lite (random vectors: only their model id matters, it makes them
 * stale), then a service with the `--to` encoder (the server's stack: encoder thread, batching,
 * default threads) loads every user and waits until each unit has its new vector. Prints the
 * wall time, per 10k memories, and the encoder's texts per second.
 *
 *   npm run build && node dist/bench/reembed-time.js [--memories 10000] [--users 10] [--from int8] [--to fp32] [--model-dir <dir>]
 *
 * `--model-dir` switches to that folder's model (a sentence-transformers export) instead of `--to`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_ENCODER_THREADS } from '../src/config.js';
import { createEmbedder } from '../src/embedding/create-embedder.js';
import { OnnxEmbedder, type ModelPrecision } from '../src/embedding/onnx-embedder.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import { openStore } from '../src/open-service.js';
import { JsonlMemoryStore } from '../src/store/jsonl-memory-store.js';
import { round } from './http-load.js';
import { gaussianSource, randomUnitVector } from './scale-store.js';
import { DEFAULT_LOCOMO, loadWorkload, mulberry32 } from './workload.js';

function argument(name: string): string | undefined {
  const at = process.argv.indexOf(name);
  return at === -1 ? undefined : process.argv[at + 1];
}

async function main(): Promise<void> {
  const memories = Number(argument('--memories') ?? 10_000);
  const users = Number(argument('--users') ?? 10);
  const from = (argument('--from') ?? 'int8') as ModelPrecision;
  const to = (argument('--to') ?? 'fp32') as ModelPrecision;
  const modelDir = argument('--model-dir');
  const old = new OnnxEmbedder({ precision: from }); // identity only: the model is not loaded
  const workload = await loadWorkload(DEFAULT_LOCOMO);
  const texts = workload.conversations.flatMap((conversation) => conversation.turns);
  const gaussian = gaussianSource(mulberry32(memories));
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-reembed-'));
  try {
    const store = new JsonlMemoryStore(dataDir, silentLogger());
    await store.init();
    const now = new Date().toISOString();
    const perUser = Math.ceil(memories / users);
    for (let user = 0; user < users; user++) {
      const userId = `switched-${user}`;
      const count = Math.min(perUser, memories - user * perUser);
      const drafts = Array.from({ length: count }, (_, i) => {
        const turn = texts[(user * perUser + i) % texts.length]!;
        const record = { id: `${user}-${i}`, user_id: userId, text: turn.content, tags: [], importance: 0.5, source: 'add', created_at: now, session_id: 's1', role: turn.speaker, occurred_at: now, request_id: `r${user}`, message_index: i, model: old.modelId };
        return { record, vector: randomUnitVector(new Float32Array(old.dimensions), gaussian) };
      });
      await store.append(userId, drafts, { requestId: `r${user}` });
    }
    await store.close();

    const embedder = createEmbedder({ embedder: 'onnx', modelDir, modelPrecision: to, encoderThreads: DEFAULT_ENCODER_THREADS });
    const service = await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, logger: silentLogger(), preload: false, indexFlushDelayMs: 0 });
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    // A search loads its user (served at once) and queues its re-embedding.
    for (let user = 0; user < users; user++) await service.search({ userId: `switched-${user}`, query: 'what did they talk about', limit: 1 });
    const servedMs = performance.now() - started;
    await service.reembeddingSettled();
    const ms = performance.now() - started;
    const cpu = process.cpuUsage(cpuBefore);
    await service.close();
    await embedder.close();
    process.stdout.write(
      `${JSON.stringify(
        {
          memories,
          users,
          texts: workload.source,
          from: old.modelId,
          to: embedder.modelId,
          first_searches_ms: round(servedMs, 0),
          reembed_ms: round(ms, 0),
          ms_per_10k_memories: round((ms * 10_000) / memories, 0),
          memories_per_s: round((memories * 1000) / ms, 0),
          // The encoder thread's CPU is part of this process's.
          cpu_ms_per_memory: round((cpu.user + cpu.system) / 1000 / memories, 2),
          cores: os.cpus().length,
          cpu_model: os.cpus()[0]?.model,
        },
        null,
        2,
      )}\n`,
    );
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
});
