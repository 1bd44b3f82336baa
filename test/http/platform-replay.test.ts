import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadLocomo } from '../../eval/datasets/locomo.js';
import { planAdds } from '../../eval/replay-plan.js';
import { mapConcurrent } from '../../eval/pool.js';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/main.js';
import { register, tempDir } from '../support/helper.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
// CI lays shared/ beside the clone; the dataset is read from there, never copied into the repo.
const dataset = path.resolve(root, '../shared/datasets/locomo10-dev.json');

/**
 * The platform's replay of one LoCoMo conversation through real HTTP, on the real model: one Add per
 * session chunk (16 at once, out of order), then every question with top_k 100 (32 at once).
 */
describe.skipIf(!existsSync(dataset))('replay of a LoCoMo conversation through real HTTP with the ONNX model', () => {
  it('answers every Add with 200 and every Search with a valid ranked data array', async () => {
    const benchmark = await loadLocomo(dataset);
    const user = benchmark.users[0];
    const questions = benchmark.questions.filter((question) => question.userId === user.userId);
    const adds = planAdds(user);
    expect(adds.length).toBeGreaterThan(10);

    const token = 'replay-token-0123456789';
    const config = loadConfig({ dataDir: await tempDir(), port: 0, token, logLevel: 'warn' }, {});
    const server = await startServer(config);
    register(() => server.close());
    const headers = { 'content-type': 'application/json', authorization: `Bearer ${token}` };

    const shuffled = [...adds].sort((a, b) => (a.requestId.length * 7919 + a.messages.length) % 13 - (b.requestId.length * 7919 + b.messages.length) % 13);
    const statuses = await mapConcurrent(shuffled, 16, async (add) => {
      const response = await fetch(`${server.url}/add`, {
        method: 'POST',
        headers,
        body: JSON.stringify({
          request_id: add.requestId,
          user_id: add.userId,
          session_id: add.sessionId,
          messages: add.messages,
          metadata: { source: 'locomo' },
        }),
      });
      const body = await response.json();
      expect(body).toEqual({ success: true, request_id: add.requestId, user_id: add.userId, session_id: add.sessionId });
      return response.status;
    });
    expect(statuses.filter((status) => status !== 200)).toEqual([]);

    const turns = user.sessions.reduce((sum, session) => sum + session.turns.length, 0);
    let found = 0;
    await mapConcurrent(questions, 32, async (question) => {
      const response = await fetch(`${server.url}/search`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ query: question.query, user_id: user.userId, top_k: 100 }),
      });
      expect(response.status).toBe(200);
      const { data } = (await response.json()) as { data: Array<{ id: string; content: string; score: number; created_at: string }> };
      expect(data.length).toBe(Math.min(100, turns));
      const ids = new Set<string>();
      for (let i = 0; i < data.length; i++) {
        const hit = data[i];
        expect(hit.id).toMatch(/\S/);
        expect(hit.content).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d\] [^:]+: \S/);
        expect(Number.isFinite(hit.score)).toBe(true);
        expect(new Date(hit.created_at).toISOString()).toBe(hit.created_at);
        if (i > 0) expect(data[i - 1].score).toBeGreaterThanOrEqual(hit.score);
        ids.add(hit.id);
      }
      expect(ids.size).toBe(data.length);
      // The evidence turn's text is in the top 100 for most questions (a sanity floor, not a benchmark).
      const evidenceTexts = user.sessions.flatMap((session) => session.turns).filter((turn) => question.evidenceTurns.includes(turn.turnId)).map((turn) => turn.content.slice(0, 40));
      if (evidenceTexts.some((text) => data.some((hit) => hit.content.includes(text)))) found++;
    });
    expect(found / questions.length).toBeGreaterThan(0.8);
  });
});
