import { execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { startServer } from '../../src/main.js';
import { assertBuilt, COMPILED_CLI } from '../support/compiled.js';
import { register, tempDir } from '../support/helper.js';
import { projectRoot } from '../support/server-process.js';
import { startEdgeServer } from './edge-server.js';

/** HTTPS served directly (--tls-cert/--tls-key), with a self-signed certificate made for the test by openssl. */

async function selfSigned(): Promise<{ cert: string; key: string }> {
  const dir = await tempDir('memorypool-tls-');
  const cert = path.join(dir, 'cert.pem');
  const key = path.join(dir, 'key.pem');
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
  return { cert, key };
}

function httpsRequest(url: string, ca: Buffer, body?: unknown): Promise<{ status: number; json: unknown }> {
  return new Promise((resolve, reject) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const request = https.request(url, { method: payload ? 'POST' : 'GET', ca, headers: payload ? { 'content-type': 'application/json' } : {}, timeout: 5_000 }, (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (text += chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, json: JSON.parse(text) }));
    });
    request.on('error', reject);
    request.on('timeout', () => request.destroy(new Error('timeout')));
    request.end(payload);
  });
}

describe('HTTPS', () => {
  it('serves the API over TLS with the given certificate and key', async () => {
    const { cert, key } = await selfSigned();
    const server = await startEdgeServer({ tlsCert: cert, tlsKey: key });
    expect(server.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    const ca = readFileSync(cert);
    expect(await httpsRequest(`${server.url}/health`, ca)).toMatchObject({ status: 200, json: { ok: true } });
    const add = await httpsRequest(`${server.url}/add`, ca, { request_id: 'r1', user_id: 'u', session_id: 's', messages: [{ role: 'Caroline', content: 'I adopted a greyhound.' }] });
    expect(add.status).toBe(200);
    const search = await httpsRequest(`${server.url}/search`, ca, { query: 'greyhound', user_id: 'u', top_k: 5 });
    expect(search.status).toBe(200);
    expect((search.json as { data: unknown[] }).data).toHaveLength(1);
  });

  it('refuses plain HTTP on the TLS port, and a client that does not trust the certificate', async () => {
    const { cert, key } = await selfSigned();
    const server = await startEdgeServer({ tlsCert: cert, tlsKey: key });
    const plain = server.url.replace('https:', 'http:');
    await expect(fetch(`${plain}/health`)).rejects.toThrow();
    await expect(httpsRequest(`${server.url}/health`, Buffer.from(''))).rejects.toThrow();
  });

  it('a certificate without a key (or a missing file) fails the start with a clear message', async () => {
    const { cert } = await selfSigned();
    const dataDir = await tempDir();
    const config = (settings: object) => loadConfig({ host: '127.0.0.1', port: 0, embedder: 'hash', logLevel: 'silent', dataDir, ...settings }, {});
    await expect(startServer(config({ tlsCert: cert }))).rejects.toThrow(/both a certificate and a key/);
    await expect(startServer(config({ tlsCert: cert, tlsKey: path.join(dataDir, 'missing.pem') }))).rejects.toThrow(/ENOENT/);
  });

  it('reads MEMORYPOOL_TLS_CERT and MEMORYPOOL_TLS_KEY from the environment', () => {
    const config = loadConfig({}, { MEMORYPOOL_TLS_CERT: '/etc/cert.pem', MEMORYPOOL_TLS_KEY: '/etc/key.pem' });
    expect(config).toMatchObject({ tlsCert: '/etc/cert.pem', tlsKey: '/etc/key.pem' });
  });

  it('memorypool serve --tls-cert --tls-key serves HTTPS', async () => {
    const { cert, key } = await selfSigned();
    const dataDir = await tempDir();
    await assertBuilt();
    const child = spawn(
      process.execPath,
      [COMPILED_CLI, '--data-dir', dataDir, '--embedder', 'hash', 'serve', '--host', '127.0.0.1', '--port', '0', '--tls-cert', cert, '--tls-key', key],
      { cwd: projectRoot, env: { ...process.env, MEMORYPOOL_LOG_LEVEL: 'info', MEMORYPOOL_TOKEN: '', MEMORYPOOL_TOKENS_FILE: '' }, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    const exited = new Promise((resolve) => child.once('exit', resolve));
    register(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    });
    const url = await new Promise<string>((resolve, reject) => {
      let stderr = '';
      const timer = setTimeout(() => reject(new Error(`no listening line within 20 s: ${stderr}`)), 20_000);
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (chunk: string) => {
        stderr += chunk;
        const match = /"url":"(https?:\/\/[^"]+)"/.exec(stderr);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]);
        }
      });
    });
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
    expect(await httpsRequest(`${url}/health`, readFileSync(cert))).toMatchObject({ status: 200, json: { ok: true } });
  });
});
