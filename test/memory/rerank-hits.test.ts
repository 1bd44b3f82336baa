import { describe, expect, it } from 'vitest';
import { createReranker } from '../../src/embedding/create-reranker.js';
import type { Reranker } from '../../src/embedding/reranker.js';
import type { MemoryService } from '../../src/memory/memory-service.js';
import type { RerankSettings } from '../../src/memory/rerank-hits.js';
import type { SearchHit } from '../../src/memory/types.js';
import { blendReranked } from '../../src/retrieval/rerank-blend.js';
import { openService, register, tempDir, type TestServiceOptions } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';
import { writeTinyCrossEncoder } from '../support/tiny-cross-encoder.js';

/** Memories in the tiny model's vocabulary, so that its logits tell them apart. */
const TEXTS = [
  'my sister went to the park with the dog',
  'the dog likes to swim in the lake',
  'my brother has a cat',
  'we went to paris for my birthday',
  'the dog ran to the beach in the morning',
  'my mother read a book about dogs',
  'i play the guitar at night',
  'my friend has a puppy',
  'we had pizza and cake for dinner',
  'the cat and the dog play in the house',
  'my father went to london for work',
  'a walk with the dog by the river',
  'she told me about her trip to the mountain',
  'the dog did not like the car',
  'my sister and i went to school',
  'coffee with my friend at the office',
  'the puppy saw a cat in the park',
  'they went to the lake in june',
  'he said the dog was at home',
  'my teacher has two dogs',
];
const QUERIES = ['where did my sister walk the dog', 'who has a cat', 'what did we eat for dinner', 'the dog and the lake', 'a trip to london'];

/** The store kinds a reranked service runs on: each test gets a fresh one, and `open` gives services on it. */
const STORES: Array<[string, () => Promise<(options?: TestServiceOptions) => Promise<MemoryService>>]> = [
  ['JSONL', async () => {
    const dataDir = await tempDir();
    return (options = {}) => openService({ ...options, dataDir });
  }],
  ['PostgreSQL', async () => {
    const databaseUrl = await freshDatabase();
    return (options = {}) => openService({ ...options, databaseUrl });
  }],
];

async function tinyReranker(): Promise<Reranker> {
  const dir = await tempDir('memorypool-reranker-');
  await writeTinyCrossEncoder(dir);
  const reranker = createReranker({ rerankerDir: dir })!;
  register(() => reranker.close());
  await reranker.ready();
  return reranker;
}

const texts = (hits: readonly SearchHit[]) => hits.map((hit) => hit.memory.text);

describe.each(STORES)('a Search with a reranker (%s)', (_name, store) => {
  it('re-scores the fused top N, blends as rerank-blend.ts says, cuts at the limit; rerank:false is the plain answer exactly', async () => {
    const open = await store();
    const plain = await open();
    for (const text of TEXTS) await plain.addMemory({ userId: 'u', text });
    const rerank: RerankSettings = { reranker: await tinyReranker(), top: 8, weight: 0.6 };
    const ranked = await open({ rerank });

    let reordered = 0;
    for (const query of QUERIES) {
      const request = { userId: 'u', query, limit: 5, collapseDuplicates: true };
      const fused = await plain.search({ ...request, limit: 8 });
      // Off for this request: the answer of a service with no reranker, every field.
      expect(await ranked.search({ ...request, rerank: false })).toEqual(await plain.search(request));
      const logits = await rerank.reranker.score(query, fused.map((hit) => hit.content));
      const { order, scores } = blendReranked(fused.map((hit) => hit.score), logits, 0.6);
      const answer = await ranked.search(request);
      expect(texts(answer)).toEqual(order.slice(0, 5).map((i) => fused[i]!.memory.text));
      expect(answer.map((hit) => hit.score)).toEqual(scores.slice(0, 5).map((score) => Math.round(score * 1e6) / 1e6));
      if (texts(answer).join() !== texts(fused.slice(0, 5)).join()) reordered++;
    }
    // The reranker had its say: the test would notice it not being called.
    expect(reordered).toBeGreaterThan(0);
  });

  it('gives each Search the same answer alone and among concurrent ones, across several users too', async () => {
    const open = await store();
    const service = await open({ rerank: { reranker: await tinyReranker(), top: 50, weight: 0.5 } });
    for (const [i, text] of TEXTS.entries()) await service.addMemory({ userId: i % 2 ? 'a' : 'b', text });
    const requests = QUERIES.flatMap((query) => [{ query, userId: 'a', limit: 10 }, { query, userId: 'b', limit: 3 }]);
    const alone = [];
    for (const request of requests) alone.push(await service.search(request));
    const across = await service.searchUsers(['a', 'b'], { query: QUERIES[0]!, limit: 10, collapseDuplicates: true });
    for (let round = 0; round < 3; round++) {
      const [together, acrossAgain] = await Promise.all([Promise.all(requests.map((request) => service.search(request))), service.searchUsers(['a', 'b'], { query: QUERIES[0]!, limit: 10, collapseDuplicates: true })]);
      expect(together).toEqual(alone);
      expect(acrossAgain).toEqual(across);
    }
    // Across users, the merged top N of both is what is reranked: hits of both users answer.
    expect(new Set(across.map((hit) => hit.memory.user_id))).toEqual(new Set(['a', 'b']));
  });

  it('fails a Search with RERANKER_UNAVAILABLE when the reranker cannot run, and nothing stored changes', async () => {
    const open = await store();
    const reranker = await tinyReranker();
    const service = await open({ rerank: { reranker, top: 50, weight: 0.5 } });
    for (const text of TEXTS.slice(0, 5)) await service.addMemory({ userId: 'u', text });
    const before = await service.list({ userId: 'u', limit: 100 });
    await reranker.close();
    await expect(service.search({ userId: 'u', query: 'the dog', limit: 3 })).rejects.toMatchObject({ code: 'RERANKER_UNAVAILABLE', status: 503 });
    // Turned off for the request, the Search still answers; writes and reads go on.
    expect(texts(await service.search({ userId: 'u', query: 'the dog', limit: 3, rerank: false }))).toHaveLength(3);
    await service.addMemory({ userId: 'u', text: 'one more about the cat' });
    expect((await service.list({ userId: 'u', limit: 100 })).slice(1)).toEqual(before);
  });
});
