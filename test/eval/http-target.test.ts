import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BenchUser } from '../../eval/benchmark.js';
import { planAdds } from '../../eval/replay-plan.js';
import { HttpTarget } from '../../eval/replay-targets.js';

const day = Date.UTC(2023, 4, 8, 13, 56);
const user: BenchUser = {
  userId: 'conv',
  sessions: [
    {
      sessionId: 'session_1',
      sessionKey: 'session_1',
      turns: [
        { turnId: 'D1:1', role: 'Ann', content: 'Thanks!', timestamp: day },
        { turnId: 'D1:2', role: 'Bob', content: 'We hiked to the glacier. Then we ate fondue in the village.', timestamp: day },
        { turnId: 'D1:3', role: 'Ann', content: 'I adopted a cat named Pixel.', timestamp: day },
      ],
    },
  ],
};

interface Stored {
  role: string;
  content: string;
  timestamp: number;
}

/** A stand-in for the server: formats hits as `[date] Speaker: text` and splits on sentences. */
function fakeServer(): { server: Server; requests: Array<{ path: string; auth?: string; body: any }> } {
  const stored: Stored[] = [];
  const requests: Array<{ path: string; auth?: string; body: any }> = [];
  let failNextAdd = true;
  const server = createServer(async (req: IncomingMessage, res) => {
    let raw = '';
    for await (const chunk of req) raw += chunk;
    const body = JSON.parse(raw);
    requests.push({ path: req.url ?? '', auth: req.headers.authorization, body });
    res.setHeader('content-type', 'application/json');
    if (req.url === '/add') {
      // One transient failure: the target must retry.
      if (failNextAdd) {
        failNextAdd = false;
        res.statusCode = 503;
        res.end('{"detail":"busy"}');
        return;
      }
      for (const message of body.messages) stored.push(message);
      res.end(JSON.stringify({ success: true }));
      return;
    }
    if (req.url !== '/search') {
      res.statusCode = 404;
      res.end('{"detail":"Not Found"}');
      return;
    }
    const stamp = (ms: number) => new Date(ms).toISOString().slice(0, 16).replace('T', ' ');
    const units = stored.flatMap((message) =>
      message.content.split(/(?<=\.)\s+/).map((part) => `[${stamp(message.timestamp)}] ${message.role}: ${part}`),
    );
    const words = new Set(body.query.toLowerCase().match(/\w+/g));
    const scored = units.map((content) => ({ content, score: (content.toLowerCase().match(/\w+/g) ?? []).filter((w) => words.has(w)).length }));
    scored.sort((a, b) => b.score - a.score);
    res.end(JSON.stringify({ data: scored.slice(0, body.top_k).map((hit, i) => ({ id: String(i), content: hit.content, score: hit.score, created_at: '' })) }));
  });
  return { server, requests };
}

describe('HttpTarget', () => {
  const { server, requests } = fakeServer();
  let base: string;

  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('replays Adds through the contract and maps hits (parts included) back to turns', async () => {
    const target = new HttpTarget(base, 'secret', [user]);
    for (const add of planAdds(user)) await target.add(add);
    const adds = requests.filter((r) => r.path === '/add');
    expect(adds).toHaveLength(2); // one 503, one retry
    expect(adds[1].auth).toBe('Bearer secret');
    expect(adds[1].body).toEqual({
      request_id: 'conv/session_1/0',
      user_id: 'conv',
      session_id: 'session_1',
      messages: user.sessions[0].turns.map((turn) => ({ role: turn.role, timestamp: day, content: turn.content })),
    });

    const { ranking, words, contents } = await target.search({ questionId: 'q', userId: 'conv', query: 'Where did they eat fondue?', category: '1', evidenceTurns: ['D1:2'], evidenceSessions: [] }, 100);
    expect(ranking[0]).toEqual(['D1:2']);
    expect(words).toHaveLength(ranking.length);
    // The contents as served, for the QA score's answer prompt.
    expect(contents).toHaveLength(ranking.length);
    expect(contents![0]).toContain('fondue');
    expect(words!.every((count) => count > 0)).toBe(true);
    expect(ranking).toHaveLength(4);
    expect(ranking.every((turns) => turns.length === 1)).toBe(true);
    expect(requests.at(-1)?.body).toEqual({ query: 'Where did they eat fondue?', user_id: 'conv', top_k: 100 });
    const stats = target.matchStats();
    expect(stats.unmatched).toBe(0);
    expect(stats.piece).toBe(2);
  });

  it('gives up on a client error with the answer in the message', async () => {
    const target = new HttpTarget(`${base}/nowhere/`, undefined, [user]);
    await expect(target.search({ questionId: 'q', userId: 'conv', query: 'x', category: '1', evidenceTurns: [], evidenceSessions: [] }, 100)).rejects.toThrow(
      'POST /search answered 404: {"detail":"Not Found"}',
    );
  });
});
