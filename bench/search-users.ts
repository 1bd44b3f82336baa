import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { EmbedOptions, Embedder } from '../src/embedding/embedder.js';
import { silentLogger } from '../src/logger.js';
import { MemoryService } from '../src/memory/memory-service.js';
import { openStore } from '../src/open-service.js';
import { serverEncoder } from './server-encoder.js';
import { loadWorkload, sessionAdds } from './workload.js';

/**
 * The Search benches' data (search-cost.ts, rerank-cost.ts): LoCoMo's two longest conversations
 * (~690 memories each, the real encoder's vectors) written once to a data directory, and every
 * LoCoMo question with its query vector computed beforehand, so that a Search's CPU is scoring
 * and building the hits, the encoder left out.
 */
export interface SearchUsers {
  dataDir: string;
  /** Ingest goes to the real encoder; a query's vector is the one computed beforehand. */
  embedder: Embedder;
  questions: Array<{ query: string; userId: string }>;
  userIds: string[];
  close(): Promise<void>;
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

export async function searchUsers(locomo: string): Promise<SearchUsers> {
  const workload = await loadWorkload(locomo);
  const conversations = [...workload.conversations].sort((a, b) => b.turns.length - a.turns.length).slice(0, 2);
  const userIds = conversations.map((conversation) => `cost-${conversation.id}`);
  const questions = workload.conversations.flatMap((conversation) => conversation.questions).map((query, i) => ({ query, userId: userIds[i % 2]! }));
  const encoder = serverEncoder();
  const embedder = precomputedQueries(encoder);
  const dataDir = await mkdtemp(path.join(tmpdir(), 'memorypool-search-users-'));
  const writer = await MemoryService.open({ store: openStore({ dataDir }, silentLogger()), embedder, preload: false, indexFlushDelayMs: 0 });
  for (const [i, conversation] of conversations.entries()) {
    for (const add of sessionAdds(conversation, userIds[i]!, 64)) {
      await writer.addConversation({ requestId: add.request_id, userId: add.user_id, sessionId: add.session_id, messages: add.messages });
    }
  }
  await writer.close();
  await embedder.prepare(questions.map(({ query }) => query));
  return {
    dataDir,
    embedder,
    questions,
    userIds,
    close: async () => {
      await encoder.close();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}
