#!/usr/bin/env node
import { mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { HashEmbedder } from '../src/embedding/hash-embedder.js';
import { MemoryService } from '../src/memory/memory-service.js';
import { silentLogger } from '../src/logger.js';
import { openStore } from '../src/open-service.js';
import { DEFAULT_LOCOMO, loadWorkload, sessionAdds } from './workload.js';

/**
 * `node dist/bench/score-user.js [locomo.json] [rounds]`: the in-process cost of scoring one
 * user of LoCoMo's size (~700 units): every question of the conversation searched with top_k 100,
 * `rounds` times, on the hash embedder so that the figure is the scoring and hit building, not
 * the encoder. Prints ms per search and the process CPU, with the load average (a shared machine
 * makes every figure noisier). A benchmark: it prints, it never fails.
 */
async function main(): Promise<void> {
  const locomoPath = process.argv[2] ?? DEFAULT_LOCOMO;
  const rounds = Number(process.argv[3] ?? 5);
  const workload = await loadWorkload(locomoPath);
  const conversation = workload.conversations.reduce((a, b) => (b.turns.length > a.turns.length ? b : a));
  const dataDir = await mkdtemp(join(tmpdir(), 'memorypool-score-bench-'));
  const embedder = new HashEmbedder();
  const service = await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 });
  try {
    for (const add of sessionAdds(conversation, 'bench-user')) {
      await service.addConversation({ requestId: add.request_id, userId: add.user_id, sessionId: add.session_id, messages: add.messages });
    }
    const units = (await service.exportUnits('bench-user')).length;
    const questions = conversation.questions.length > 0 ? conversation.questions : conversation.turns.slice(0, 200).map((turn) => turn.content);
    // Query vectors first, so the timed loop is scoring and hit building only.
    for (const query of questions) await embedder.embed([query]);
    for (const query of questions.slice(0, 50)) await service.search({ userId: 'bench-user', query, limit: 100 });
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    let searches = 0;
    for (let round = 0; round < rounds; round++) {
      for (const query of questions) {
        await service.search({ userId: 'bench-user', query, limit: 100 });
        searches++;
      }
    }
    const wallMs = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    const embedT0 = performance.now();
    for (const query of questions) await embedder.embed([query]);
    const embedMs = (performance.now() - embedT0) / questions.length;
    const result = {
      source: workload.source,
      units,
      searches,
      msPerSearch: +(wallMs / searches).toFixed(3),
      cpuMsPerSearch: +((cpu.user + cpu.system) / 1000 / searches).toFixed(3),
      hashEmbedMsPerQuery: +embedMs.toFixed(3),
      loadAverage1m: +loadavg()[0].toFixed(2),
      cores: cpus().length,
    };
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    await service.close();
    await embedder.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`score-user: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
