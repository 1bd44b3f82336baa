import { describe, expect, it } from 'vitest';
import { applyTerms } from '../../src/retrieval/fuse-scores.js';
import { build } from '../support/helper.js';

type Explained = { score: number; explanation?: { score: number; terms: Array<{ term: string; kind: string; value: number }> } };

async function seeded() {
  const built = await build();
  await built.app.inject({ method: 'POST', url: '/mem', payload: { text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.9 } });
  await built.app.inject({ method: 'POST', url: '/mem', payload: { text: 'Caroline works as a counsellor', importance: 0.5 } });
  await built.app.inject({ method: 'POST', url: '/mem', payload: { text: 'Melanie bought a dog bed', importance: 0.1 } });
  return built;
}

/** Each hit's terms, replayed from 0, give its unrounded score, which rounds to the hit's score. */
function expectExplained(hits: Explained[]): void {
  expect(hits.length).toBeGreaterThan(0);
  for (const hit of hits) {
    const { explanation } = hit;
    expect(explanation).toBeDefined();
    expect(applyTerms(explanation!.terms as never)).toBeCloseTo(explanation!.score, 12);
    expect(Math.round(explanation!.score * 1e6) / 1e6).toBe(hit.score);
    for (const term of explanation!.terms) expect(['add', 'multiply']).toContain(term.kind);
  }
}

describe('score explanations', () => {
  it('GET /mem/search?explain=true breaks each score into its terms; without it, no explanation', async () => {
    const { app } = await seeded();
    const explained = (await app.inject({ method: 'GET', url: '/mem/search?q=dog+named+Max&explain=true' })).json() as Explained[];
    expectExplained(explained);
    const top = explained[0].explanation!.terms;
    expect(top.filter((term) => term.kind === 'add').map((term) => term.term)).toContain('dense');
    // The 0.9-importance memory's score carries its importance multiplier.
    expect(top.find((term) => term.term === 'importance')).toMatchObject({ kind: 'multiply' });

    for (const url of ['/mem/search?q=dog+named+Max', '/mem/search?q=dog+named+Max&explain=false', '/mem/search?q=dog+named+Max&explain=0']) {
      const plain = (await app.inject({ method: 'GET', url })).json() as Explained[];
      expect(plain.map((hit) => hit.score)).toEqual(explained.map((hit) => hit.score));
      for (const hit of plain) expect(hit).not.toHaveProperty('explanation');
    }
  });

  it('the /invoke search action explains with "explain": true', async () => {
    const { app } = await seeded();
    const response = await app.inject({ method: 'POST', url: '/invoke', payload: { tool: 'memorypool', params: { action: 'search', query: 'dog', explain: true } } });
    expect(response.statusCode).toBe(200);
    expectExplained(response.json());
  });

  it('a bad explain value is a 400 naming it', async () => {
    const { app } = await seeded();
    for (const request of [
      { method: 'GET' as const, url: '/mem/search?q=dog&explain=maybe' },
      { method: 'POST' as const, url: '/invoke', payload: { params: { action: 'search', query: 'dog', explain: 'yes please' } } },
    ]) {
      const response = await app.inject(request);
      expect(response.statusCode).toBe(400);
      expect(response.json()).toEqual({ detail: { reason: 'explain: explain must be true or false' }, error: 'explain: explain must be true or false' });
    }
  });

  it("the platform's /search answer is unchanged, byte for byte, whatever the body says about explain", async () => {
    const { app } = await build();
    await app.inject({ method: 'POST', url: '/add', payload: { request_id: 'r1', user_id: 'u', session_id: 's', messages: [{ role: 'Caroline', content: 'I adopted a dog named Max', timestamp: 1683554160000 }] } });
    const body = { query: 'dog', user_id: 'u', top_k: 5 };
    const plain = await app.inject({ method: 'POST', url: '/search', payload: body });
    const asked = await app.inject({ method: 'POST', url: '/search', payload: { ...body, explain: true } });
    expect(asked.body).toBe(plain.body);
    expect(Object.keys(plain.json().data[0])).toEqual(['id', 'content', 'score', 'created_at']);
  });
});
