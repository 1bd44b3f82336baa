#!/usr/bin/env node
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { EmbedOptions, Embedder } from '../src/embedding/embedder.js';
import { MemoryService } from '../src/memory/memory-service.js';
import { silentLogger } from '../src/logger.js';
import { openStore } from '../src/open-service.js';
import { serverEncoder } from './server-encoder.js';
import { DEFAULT_LOCOMO, loadWorkload, sessionAdds } from './workload.js';

/**
 * `node dist/bench/search-cost.js [--locomo <file>] [--rounds 4] [--base <dist dir>]`: what one
 * Search costs this thread, the encoder left out. The bench's Search users (LoCoMo's two longest
 * conversations, ~690 memories each, the real encoder's vectors) are ingested once; then every
 * LoCoMo question is searched (top_k 100, the platform profile) `rounds` times with its query
 * vector already computed, so the CPU per Search is scoring and building the hits.
 *
 * With `--base`, the `dist/` of another build (e.g. the commit before a change, built in a
 * checkout of its own) searches the very same data in the same process, rounds alternating, and
 * every answer of both (ids, unrounded scores, explanation terms) is compared: a scoring change
 * meant to be faster only must report `differing: 0`. A benchmark: it prints, it never fails.
 */
interface Target {
  name: string;
  service: MemoryService;
}

/** Query vectors computed once; ingest goes to the encoder. The copies keep callers' vectors their own. */
function precomputedQueries(encoder: Embedder): Embedder & { prepare(texts: readonly string[]): Promise<void> } {
  const vectors = new Map<string, Float32Array>();
  return {
    modelId: encoder.modelId,
    dimensions: encoder.dimensions,
    ready: () => encoder.ready(),
    close: async () => undefined,
    async prepare(texts) {
      const missing = [...new Set(texts)].filter((text) => !vectors.has(text));
      for (let i = 0; i < missing.length; i += 64) {
        const batch = missing.slice(i, i + 64);
        (await encoder.embed(batch)).forEach((vector, j) => vectors.set(batch[j], vector));
      }
    },
    async embed(texts: readonly string[], options?: EmbedOptions) {
      if (options?.priority !== 'query') return encoder.embed(texts, options);
      return texts.map((text) => {
        const vector = vectors.get(text);
        if (!vector) throw new Error(`no precomputed vector for ${JSON.stringify(text)}`);
        return vector.slice();
      });
    },
  };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { locomo: { type: 'string', default: DEFAULT_LOCOMO }, rounds: { type: 'string', default: '4' }, base: { type: 'string' } } });
  const rounds = Number(values.rounds);
  const workload = await loadWorkload(values.locomo!);
  const conversations = [...workload.conversations].sort((a, b) => b.turns.length - a.turns.length).slice(0, 2);
  const questions = workload.conversations.flatMap((conversation) => conversation.questions).map((query, i) => ({ query, userId: `cost-${conversations[i % 2].id}` }));
  const encoder = serverEncoder();
  const embedder = precomputedQueries(encoder);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'memorypool-search-cost-'));
  const targets: Target[] = [];
  try {
    const writer = await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 });
    for (const conversation of conversations) {
      for (const add of sessionAdds(conversation, `cost-${conversation.id}`, 64)) {
        await writer.addConversation({ requestId: add.request_id, userId: add.user_id, sessionId: add.session_id, messages: add.messages });
      }
    }
    await writer.close();
    await embedder.prepare(questions.map(({ query }) => query));

    targets.push({ name: 'this build', service: await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 }) });
    if (values.base !== undefined) {
      const module = (await import(pathToFileURL(path.resolve(values.base, 'src/memory/memory-service.js')).href)) as { MemoryService: { open(options: object): Promise<MemoryService> } };
      // Builds since the store left MemoryService take it opened (open-service.js); older ones took dataDir.
      const opener = (await import(pathToFileURL(path.resolve(values.base, 'src/open-service.js')).href).catch(() => ({}))) as { openStore?: typeof openStore };
      const where = opener.openStore ? { store: opener.openStore({ dataDir }, silentLogger()) } : { dataDir };
      targets.push({ name: `base (${values.base})`, service: await module.MemoryService.open({ ...where, embedder, preload: false, indexFlushDelayMs: 0 }) });
    }

    const answers = new Map<string, string[]>();
    for (const target of targets) {
      const out: string[] = [];
      for (const { query, userId } of questions) {
        const hits = await target.service.search({ userId, query, limit: 100, profile: 'platform', explain: true });
        out.push(JSON.stringify(hits.map((hit) => [hit.memory.id, hit.score, hit.explanation])));
      }
      answers.set(target.name, out);
    }
    const cpuMs = new Map<string, number[]>(targets.map((target) => [target.name, []]));
    for (let round = 0; round < rounds; round++) {
      for (const target of targets) {
        const started = process.cpuUsage();
        for (const { query, userId } of questions) await target.service.search({ userId, query, limit: 100, profile: 'platform' });
        const used = process.cpuUsage(started);
        cpuMs.get(target.name)!.push(+((used.user + used.system) / 1000 / questions.length).toFixed(3));
      }
    }
    const [mine, base] = targets.map((target) => answers.get(target.name)!);
    const result = {
      memories: (await targets[0].service.exportUnits(`cost-${conversations[0].id}`)).length + (await targets[0].service.exportUnits(`cost-${conversations[1].id}`)).length,
      searches_per_round: questions.length,
      cpu_ms_per_search: Object.fromEntries(cpuMs),
      ...(base === undefined ? {} : { differing: mine.filter((answer, i) => answer !== base[i]).length }),
      load_average_1m: +loadavg()[0].toFixed(2),
    };
    process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  } finally {
    for (const target of targets) await target.service.close();
    await encoder.close();
    await rm(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`search-cost: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
