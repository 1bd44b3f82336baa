import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assertBuilt, COMPILED_MAIN } from './support/compiled.js';
import { register, tempDir } from './support/helper.js';
import { freshDatabase } from './support/postgres.js';
import { freePort, projectRoot, sleep, startServerProcess, type ServerProcess } from './support/server-process.js';

/**
 * `MEMORYPOOL_PROCESSES=2`: the cluster primary and two server processes on one port and one data
 * directory (src/server-cluster.ts), as users run it. Each request goes on a connection of its own,
 * so consecutive requests are handed to different processes (round robin).
 */

const CLUSTER = { MEMORYPOOL_PROCESSES: '2', MEMORYPOOL_LOG_LEVEL: 'info' };

async function startCluster(env: Record<string, string> = {}): Promise<ServerProcess> {
  const server = await startServerProcess({ dataDir: await tempDir(), env: { ...CLUSTER, ...env } });
  await server.waitForLog((record) => record.msg === 'memorypool processes listening', 20_000);
  return server;
}

/** One request on a fresh connection (no keep-alive agent): the primary hands each connection to the next process. */
function fresh(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any; text: string }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(`${url}${path}`, { method, agent: false, headers: payload ? { 'content-type': 'application/json' } : {}, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => {
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          parsed = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body: parsed, text });
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${path} timed out`)));
    req.on('error', reject);
    req.end(payload);
  });
}

function addBody(i: number) {
  return { request_id: `cluster-${i}`, user_id: 'cluster-u', session_id: `s-${i}`, messages: [{ role: 'user', content: `Note ${i}: the lighthouse keeper paints seashell number ${i}` }] };
}

/** The server processes under the primary, from /proc. */
function children(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(' ').filter(Boolean).map(Number);
}

describe('several server processes on one port', () => {
  it('answers from every process, each seeing what another acknowledged, and drains them all on SIGTERM', async () => {
    const server = await startCluster();
    expect(children(server.child.pid!)).toHaveLength(2);
    for (let i = 0; i < 6; i++) {
      const added = await fresh(server.url, 'POST', '/add', addBody(i));
      expect(added.status, added.text).toBe(200);
      // The very next request goes to the other process: it must see this Add at once.
      const found = await fresh(server.url, 'POST', '/search', { user_id: 'cluster-u', query: 'lighthouse seashell', top_k: 100 });
      expect(found.status, found.text).toBe(200);
      expect(found.body.data).toHaveLength(i + 1);
    }
    // An Add repeated on another process is a repeat, not a second copy.
    expect((await fresh(server.url, 'POST', '/add', addBody(0))).status).toBe(200);
    expect((await fresh(server.url, 'GET', '/health')).body.count).toBe(6);
    expect((await fresh(server.url, 'GET', '/health')).body.count).toBe(6);

    expect(await server.stop('SIGTERM', 15_000)).toEqual({ code: 0, signal: null });
    expect(server.logs().filter((record) => record.msg === 'memorypool stopped')).toHaveLength(2);
  });

  it('serves a PostgreSQL pool the same way: each process sees what another acknowledged', async () => {
    const server = await startCluster({ MEMORYPOOL_DATABASE_URL: await freshDatabase() });
    for (let i = 0; i < 4; i++) {
      expect((await fresh(server.url, 'POST', '/add', addBody(i))).status).toBe(200);
      const found = await fresh(server.url, 'POST', '/search', { user_id: 'cluster-u', query: 'lighthouse seashell', top_k: 100 });
      expect(found.body.data).toHaveLength(i + 1);
    }
    expect(await server.stop('SIGTERM', 15_000)).toEqual({ code: 0, signal: null });
  });

  it("serves /metrics summed over the processes, the pool's counts taken once", async () => {
    const server = await startCluster({ MEMORYPOOL_METRICS_PUBLIC: 'true' });
    for (let i = 0; i < 3; i++) expect((await fresh(server.url, 'POST', '/add', addBody(i))).status).toBe(200);
    for (let i = 0; i < 7; i++) expect((await fresh(server.url, 'POST', '/search', { user_id: 'cluster-u', query: 'lighthouse', top_k: 10 })).status).toBe(200);
    const text = (await fresh(server.url, 'GET', '/metrics')).text;
    const value = (pattern: RegExp) => Number(pattern.exec(text)?.[1]);
    expect(value(/^memorypool_http_requests_total\{method="POST",route="\/search",status="200"\} (\d+)$/m)).toBe(7);
    expect(value(/^memorypool_http_requests_total\{method="POST",route="\/add",status="200"\} (\d+)$/m)).toBe(3);
    expect(value(/^memorypool_memories (\d+)$/m)).toBe(3);
    expect(value(/^memorypool_users (\d+)$/m)).toBe(1);
  });

  it('holds one rate limit per client across the processes', async () => {
    const server = await startCluster({ MEMORYPOOL_RATE_LIMIT: '4' });
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await fresh(server.url, 'POST', '/search', { user_id: 'cluster-u', query: 'lighthouse', top_k: 10 })).status);
    // Per-process counts would let 8 through (4 on each).
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
  });

  it('replaces a process that dies, and keeps serving meanwhile', async () => {
    const server = await startCluster();
    const [victim, survivor] = children(server.child.pid!);
    process.kill(victim, 'SIGKILL');
    await server.waitForLog((record) => record.msg === 'a server process died: starting another' && record.pid === victim, 10_000);
    for (let i = 0; i < 4; i++) expect((await fresh(server.url, 'POST', '/add', addBody(i))).status).toBe(200);
    for (let deadline = performance.now() + 20_000; children(server.child.pid!).length < 2; ) {
      if (performance.now() > deadline) throw new Error('no replacement process');
      await sleep(50);
    }
    const now = children(server.child.pid!);
    expect(now).toContain(survivor);
    expect(now).not.toContain(victim);
    expect((await fresh(server.url, 'GET', '/health')).body.count).toBe(4);
  });

  it('exits 1 when its processes cannot start (the port is taken), instead of forking them forever', async () => {
    const port = await freePort();
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(port, '127.0.0.1', resolve));
    register(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    await assertBuilt();
    const child = spawn(process.execPath, [COMPILED_MAIN], {
      cwd: projectRoot,
      env: { ...process.env, ...CLUSTER, MEMORYPOOL_DATA_DIR: await tempDir(), MEMORYPOOL_PORT: String(port), MEMORYPOOL_HOST: '127.0.0.1', MEMORYPOOL_EMBEDDER: 'hash', MEMORYPOOL_TOKEN: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    register(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    });
    expect(await exited).toBe(1);
    expect(stderr).toContain('a server process exited before it listened');
  });
});
