import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryPoolClient, MemoryPoolError } from 'memorypool-client';
import * as clientModule from 'memorypool-client';
import { startMisbehavingServer, type MisbehavingServer, type Reply } from './misbehaving-server.js';

/** The shared table (also run by the Python client's tests): one case per behaviour, on a real socket. */
export interface BehaviourCase {
  name: string;
  call: string;
  args: Record<string, any>;
  client?: { retries?: number; timeoutMs?: number; retryDelayMs?: number; maxRetryDelayMs?: number; token?: string };
  replies: Reply[];
  expect: {
    attempts: number;
    result?: unknown;
    error?: { class: string; status?: number; reason?: string; code?: string; issues?: unknown[] };
    request?: { method: string; path: string; query?: Record<string, string>; body?: Record<string, unknown>; headers?: Record<string, string> };
    sameBodyAcrossAttempts?: boolean;
    minElapsedMs?: number;
  };
}

export const behaviourCases = (JSON.parse(readFileSync(new URL('./behaviour-cases.json', import.meta.url), 'utf8')) as { cases: BehaviourCase[] }).cases;

/** The method's own argument order: ids and user ids first, the rest as one params object. */
function callArguments(call: string, args: Record<string, any>): unknown[] {
  const { id, user_id: userId, payload, ...rest } = args;
  if (['get', 'update', 'history', 'forget'].includes(call)) return [id, userId === undefined ? rest : { ...rest, user_id: userId }];
  if (call === 'deleteUser') return [userId];
  if (call === 'invoke') return [payload];
  if (call === 'health') return [];
  return [args];
}

describe('the TypeScript client against a socket that misbehaves on cue', () => {
  let server: MisbehavingServer;
  beforeAll(async () => {
    server = await startMisbehavingServer();
  });
  afterAll(() => server.close());

  it.each(behaviourCases.map((entry) => [entry.name, entry] as const))('%s', async (_name, entry) => {
    server.arm(entry.replies);
    const client = new MemoryPoolClient({ url: server.url, retries: 2, timeoutMs: 2000, retryDelayMs: 1, maxRetryDelayMs: 5, token: '', ...entry.client });
    const started = performance.now();
    const outcome = await (client as any)[entry.call](...callArguments(entry.call, entry.args)).then(
      (result: unknown) => ({ result }),
      (error: unknown) => ({ error }),
    );
    const elapsed = performance.now() - started;
    const attempts = server.attempts();
    expect(attempts).toHaveLength(entry.expect.attempts);
    if (entry.expect.error) {
      const error = (outcome as { error?: unknown }).error as MemoryPoolError;
      expect(error, 'the call should have failed').toBeInstanceOf((clientModule as any)[entry.expect.error.class]);
      expect(error).toBeInstanceOf(MemoryPoolError);
      expect(error.constructor.name).toBe(entry.expect.error.class);
      const { class: _class, ...fields } = entry.expect.error;
      expect(error).toMatchObject(fields);
    } else {
      expect(outcome).toEqual({ result: entry.expect.result });
    }
    const request = entry.expect.request;
    if (request) {
      expect(attempts[0]).toMatchObject({ method: request.method, path: request.path, headers: request.headers ?? {} });
      if (request.query) expect(attempts[0].query).toEqual(request.query);
      if (request.body) expect(attempts[0].body).toMatchObject(request.body);
    }
    if (entry.expect.sameBodyAcrossAttempts) for (const attempt of attempts) expect(attempt.body).toEqual(attempts[0].body);
    if (entry.expect.minElapsedMs) expect(elapsed).toBeGreaterThanOrEqual(entry.expect.minElapsedMs);
  });

  it('takes retries and timeoutMs per call too', async () => {
    const client = new MemoryPoolClient({ url: server.url, retries: 2, retryDelayMs: 1, timeoutMs: 2000 });
    server.arm([{ status: 503, headers: { 'retry-after': '0' } }]);
    await expect(client.stats({}, { retries: 0 })).rejects.toMatchObject({ name: 'InternalServerError', status: 503 });
    expect(server.attempts()).toHaveLength(1);
    server.arm([{ status: 200, body: [], delayMs: 1000 }]);
    await expect(client.list({}, { timeoutMs: 100, retries: 0 })).rejects.toMatchObject({ name: 'APITimeoutError' });
    expect(server.attempts()).toHaveLength(1);
  });

  it('stops waiting when the caller aborts, and does not retry', async () => {
    server.arm([{ status: 200, body: [], delayMs: 1000 }]);
    const client = new MemoryPoolClient({ url: server.url, retryDelayMs: 1 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 50);
    await expect(client.list({}, { signal: controller.signal })).rejects.toMatchObject({ name: 'APIUserAbortError' });
    expect(server.attempts()).toHaveLength(1);
  });

  it('reads its defaults from MEMORYPOOL_URL and MEMORYPOOL_TOKEN', async () => {
    server.arm([{ status: 200, body: { ok: true } }]);
    const saved = { url: process.env.MEMORYPOOL_URL, token: process.env.MEMORYPOOL_TOKEN };
    process.env.MEMORYPOOL_URL = `${server.url}/`;
    process.env.MEMORYPOOL_TOKEN = 'from-env';
    try {
      await new MemoryPoolClient().health();
    } finally {
      for (const [name, value] of [['MEMORYPOOL_URL', saved.url], ['MEMORYPOOL_TOKEN', saved.token]] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
    expect(server.attempts()[0]).toMatchObject({ path: '/health', headers: { authorization: 'Bearer from-env' } });
    expect(new MemoryPoolClient().url).toBe(process.env.MEMORYPOOL_URL?.replace(/\/+$/, '') || 'http://127.0.0.1:8751');
  });
});
