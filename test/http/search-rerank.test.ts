import { describe, expect, it } from 'vitest';
import { createReranker } from '../../src/embedding/create-reranker.js';
import { applyTerms } from '../../src/retrieval/fuse-scores.js';
import { build, register, tempDir } from '../support/helper.js';
import { writeTinyCrossEncoder } from '../support/tiny-cross-encoder.js';

const TEXTS = ['my sister went to the park with the dog', 'the dog likes to swim in the lake', 'my brother has a cat', 'a walk with the dog by the river', 'the puppy saw a cat in the park', 'my friend has a puppy', 'the dog did not like the car'];

/** Two apps on one data directory: one with the tiny reranker, one without. */
async function apps() {
  const dir = await tempDir('memorypool-reranker-');
  await writeTinyCrossEncoder(dir);
  const reranker = createReranker({ rerankerDir: dir })!;
  register(() => reranker.close());
  const dataDir = await tempDir();
  const plain = await build({ dataDir });
  for (const text of TEXTS) await plain.app.inject({ method: 'POST', url: '/mem', payload: { text } });
  const ranked = await build({ dataDir, service: { rerank: { reranker, top: 50, weight: 0.7 } } });
  return { plain: plain.app, ranked: ranked.app };
}

type Hit = { text: string; score: number; explanation?: { score: number; terms: Array<{ term: string; kind: 'add' | 'multiply'; value: number }> } };

describe('rerank on every search door', () => {
  it('GET and POST /mem/search, /invoke and the platform /search rerank by default; rerank=false answers as a server without a reranker', async () => {
    const { plain, ranked } = await apps();
    const get = (app: typeof plain, query: string) => app.inject({ method: 'GET', url: `/mem/search?q=${encodeURIComponent('where is the dog')}&limit=5${query}` });
    const fused = (await get(plain, '')).json() as Hit[];
    const reranked = (await get(ranked, '')).json() as Hit[];
    expect(reranked.map((hit) => hit.text)).not.toEqual(fused.map((hit) => hit.text));
    for (const off of ['&rerank=false', '&rerank=0']) expect((await get(ranked, off)).json()).toEqual(fused);
    expect((await get(ranked, '&rerank=true')).json()).toEqual(reranked);

    const post = (body: Record<string, unknown>) => ranked.inject({ method: 'POST', url: '/mem/search', payload: { query: 'where is the dog', limit: 5, ...body } });
    expect((await post({})).json()).toEqual(reranked);
    expect((await post({ rerank: false })).json()).toEqual(fused);
    const invoke = (params: Record<string, unknown>) => ranked.inject({ method: 'POST', url: '/invoke', payload: { tool: 'memorypool', params: { action: 'search', query: 'where is the dog', limit: 5, ...params } } });
    expect((await invoke({})).json()).toEqual(reranked);
    expect((await invoke({ rerank: false })).json()).toEqual(fused);

    // The evaluation platform's contract has no such field: its Search is reranked when the server is.
    const platform = (app: typeof plain) => app.inject({ method: 'POST', url: '/search', payload: { query: 'where is the dog', user_id: 'default', top_k: 5 } });
    const platformIds = ((await platform(ranked)).json() as { data: Array<{ content: string }> }).data.map((hit) => hit.content);
    expect(platformIds).not.toEqual(((await platform(plain)).json() as { data: Array<{ content: string }> }).data.map((hit) => hit.content));
  });

  it('explains a reranked score: the fusion\'s terms, then the blend\'s, replaying to it', async () => {
    const { ranked } = await apps();
    const explained = (await ranked.inject({ method: 'GET', url: '/mem/search?q=the+dog+and+the+cat&explain=true' })).json() as Hit[];
    const plain = (await ranked.inject({ method: 'GET', url: '/mem/search?q=the+dog+and+the+cat' })).json() as Hit[];
    expect(explained.map((hit) => [hit.text, hit.score])).toEqual(plain.map((hit) => [hit.text, hit.score]));
    for (const hit of explained) {
      const terms = hit.explanation!.terms;
      expect(terms.slice(-2).map((term) => term.term)).toEqual(['rerank_fused_share', 'reranker']);
      expect(terms.at(-1)!.value).toBeGreaterThan(0);
      expect(terms.at(-1)!.value).toBeLessThan(0.7);
      expect(applyTerms(terms as never)).toBeCloseTo(hit.explanation!.score, 12);
      expect(Math.round(hit.explanation!.score * 1e6) / 1e6).toBe(hit.score);
    }
  });

  it('refuses a rerank that is not a boolean, naming it', async () => {
    const { ranked } = await apps();
    const response = await ranked.inject({ method: 'GET', url: '/mem/search?q=dog&rerank=maybe' });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ detail: { reason: 'rerank: rerank must be true or false' }, error: 'rerank: rerank must be true or false' });
  });
});
