import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { build, register } from '../support/helper.js';
import { callError, callJson, exerciseBadArguments, exerciseEveryTool } from '../support/exercise-tools.js';

/** A real server on an ephemeral loopback port, and an SDK client connected to its /mcp. */
async function serve(options: Parameters<typeof build>[0] = {}) {
  const built = await build(options);
  const url = await built.app.listen({ host: '127.0.0.1', port: 0 });
  return { ...built, url };
}

async function connect(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'memorypool-test', version: '0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers } }));
  register(() => client.close());
  return client;
}

describe('MCP over streamable HTTP at /mcp', () => {
  it('lists the tools and runs each one', async () => {
    const { url } = await serve({ token: 'secret-token' });
    await exerciseEveryTool(await connect(url, { authorization: 'Bearer secret-token' }));
  });

  it('answers bad arguments with the messages the HTTP API gives', async () => {
    const { app, url } = await serve();
    const client = await connect(url);
    await exerciseBadArguments(client);
    const viaHttp = await app.inject({ method: 'POST', url: '/mem', payload: { text: 'x', importance: 2 } });
    expect(await callError(client, 'remember', { text: 'x', importance: 2 })).toBe(viaHttp.json().detail.reason);
  });

  it('refuses a missing or wrong token before any tool runs', async () => {
    const { url, service } = await serve({ token: 'secret-token' });
    await expect(connect(url)).rejects.toMatchObject({ code: 401, message: expect.stringContaining('Missing credentials') });
    await expect(connect(url, { authorization: 'Bearer wrong-token' })).rejects.toMatchObject({ code: 401, message: expect.stringContaining('Invalid credentials') });
    const raw = await fetch(new URL('/mcp', url), { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
    expect(raw.status).toBe(401);
    expect(await raw.json()).toEqual({ detail: { reason: 'Missing credentials: send Authorization: Bearer <token>' } });
    expect(service.count).toBe(0);
  });

  it("applies a scoped token's user prefixes to every tool call", async () => {
    const { createHash } = await import('node:crypto');
    const digest = createHash('sha256').update('team-a-token').digest();
    const { url } = await serve({ grants: [{ digest, userPrefixes: ['team-a/'] }] });
    const client = await connect(url, { 'x-api-key': 'team-a-token' });
    await callJson(client, 'remember', { text: 'allowed', user_id: 'team-a/alice' });
    expect(await callError(client, 'remember', { text: 'not allowed', user_id: 'team-b/bob' })).toBe('These credentials do not cover user "team-b/bob"');
    expect(await callError(client, 'recall', { query: 'allowed' })).toBe('These credentials do not cover user "default"');
    // Several users: every one must be covered, and the refusal names the first that is not.
    expect(await callError(client, 'recall', { query: 'allowed', user_ids: ['team-a/alice', 'team-b/bob', 'team-c/carl'] })).toBe('These credentials do not cover user "team-b/bob"');
    expect(await callJson(client, 'memory_stats', {})).toMatchObject({ count: 1, users: 1 });
  });

  it('has no sessions to stream or end: GET and DELETE /mcp are 405', async () => {
    const { url } = await serve();
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(new URL('/mcp', url), { method, headers: { accept: 'application/json, text/event-stream' } });
      expect(response.status).toBe(405);
      expect(response.headers.get('allow')).toBe('POST');
      expect((await response.json()).detail.reason).toMatch(/stateless/);
    }
  });
});
