import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import chromium from '@sparticuz/chromium';
import { chromium as playwright, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { register, tempDir } from '../support/helper.js';
import { assertBuilt } from '../support/compiled.js';
import { projectRoot, startServerProcess } from '../support/server-process.js';

/**
 * The TypeScript client in a real headless Chromium (the @sparticuz/chromium dev dependency's),
 * loaded as the browser loads it: the client package's build (packages/client/dist/, what
 * `memorypool-client` ships) as ES modules from a page on one
 * origin, calling a memorypool server on another with the platform's fetch. The server lets that
 * origin in only when MEMORYPOOL_CORS_ORIGINS names it (preflight included: the calls carry a
 * token); with the default, no CORS, the browser refuses to hand the page any answer.
 */

const TOKEN = 'browser-test-token';

/** Every method the page runs, in order; what each returned (or the error's class name). */
const PAGE_SCRIPT = `
import { MemoryPoolClient } from '/client/index.js';
window.run = async (url, token) => {
  const memory = new MemoryPoolClient({ url, token, retries: 0 });
  const out = [];
  try {
    const health = await memory.health();
    out.push(['health', health.ok]);
    const dog = await memory.remember({ text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], user_id: 'caroline' });
    const [hit] = await memory.recall({ query: 'What is the dog called?', user_id: 'caroline', limit: 1 });
    out.push(['recall', hit.id === dog.id, hit.text]);
    await memory.update(dog.id, { text: 'Caroline adopted a rescue beagle named Max', user_id: 'caroline' });
    out.push(['get', (await memory.get(dog.id, { user_id: 'caroline' })).text]);
    await memory.forget(dog.id, { user_id: 'caroline' });
    out.push(['list', (await memory.list({ user_id: 'caroline' })).length]);
    try {
      await new MemoryPoolClient({ url, token: 'wrong', retries: 0 }).list({ user_id: 'caroline' });
    } catch (error) {
      out.push(['wrong token', error.constructor.name, error.status]);
    }
  } catch (error) {
    out.push(['error', error.constructor.name]);
  }
  return out;
};
`;

/** A page origin of its own: the page, and the client package's modules from its dist/. */
async function servePage(): Promise<string> {
  const server = http.createServer(async (request, response) => {
    const url = request.url ?? '/';
    if (url === '/') {
      response.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><script type="module">${PAGE_SCRIPT}</script>`);
      return;
    }
    const match = /^\/client\/([\w-]+\.js)$/.exec(url);
    if (!match) {
      response.writeHead(404).end();
      return;
    }
    try {
      const source = await readFile(path.join(projectRoot, 'packages/client/dist', match[1]), 'utf8');
      response.writeHead(200, { 'content-type': 'text/javascript' }).end(source);
    } catch {
      response.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  register(() => new Promise((resolve) => server.close(() => resolve())));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

let browser: Browser;

beforeAll(async () => {
  await assertBuilt();
  // Its serverless defaults turn the same-origin policy off (--disable-web-security): this test is about that policy.
  const args = chromium.args.filter((arg) => !['--single-process', '--disable-web-security', '--allow-running-insecure-content'].includes(arg));
  browser = await playwright.launch({ executablePath: await chromium.executablePath(), args, headless: true });
});

afterAll(async () => {
  await browser?.close();
});

async function runInPage(pageOrigin: string, serverUrl: string): Promise<unknown[]> {
  const context = await browser.newContext();
  try {
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.goto(`${pageOrigin}/`);
    await page.waitForFunction(() => typeof (window as unknown as { run?: unknown }).run === 'function');
    const out = await page.evaluate(([url, token]) => (window as unknown as { run: (url: string, token: string) => Promise<unknown[]> }).run(url, token), [serverUrl, TOKEN] as const);
    expect(errors).toEqual([]);
    return out;
  } finally {
    await context.close();
  }
}

describe('the TypeScript client in a browser', () => {
  it('runs every method against a server that lets the page origin in (MEMORYPOOL_CORS_ORIGINS)', async () => {
    const pageOrigin = await servePage();
    const server = await startServerProcess({ dataDir: await tempDir(), entry: 'dist/src/main.js', env: { MEMORYPOOL_TOKEN: TOKEN, MEMORYPOOL_CORS_ORIGINS: pageOrigin } });
    expect(await runInPage(pageOrigin, server.url)).toEqual([
      ['health', true],
      ['recall', true, 'Caroline adopted a rescue dog named Max'],
      ['get', 'Caroline adopted a rescue beagle named Max'],
      ['list', 0],
      ['wrong token', 'AuthenticationError', 401],
    ]);
  });

  it('gets no answer from a server with CORS off, the default, nor from one that lists another origin', async () => {
    const pageOrigin = await servePage();
    for (const env of [{}, { MEMORYPOOL_CORS_ORIGINS: 'http://elsewhere.example' }]) {
      const server = await startServerProcess({ dataDir: await tempDir(), entry: 'dist/src/main.js', env: { MEMORYPOOL_TOKEN: TOKEN, ...env } });
      expect(await runInPage(pageOrigin, server.url)).toEqual([['error', 'APIConnectionError']]);
      const preflight = await fetch(`${server.url}/mem`, { method: 'OPTIONS', headers: { origin: pageOrigin, 'access-control-request-method': 'POST' } });
      expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    }
  });
});
