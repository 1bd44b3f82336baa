import { describe, expect, it } from 'vitest';
import { build } from '../support/helper.js';

describe('console routes', () => {
  it('/ sends a browser to /ui and tells an API client where things are, without a token', async () => {
    const { app } = await build({ token: 'secret-token' });
    const browser = await app.inject({ method: 'GET', url: '/', headers: { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' } });
    expect(browser.statusCode).toBe(302);
    expect(browser.headers.location).toBe('/ui');
    const client = await app.inject({ method: 'GET', url: '/' });
    expect(client.statusCode).toBe(200);
    expect(client.json()).toEqual({ service: 'memorypool', console: '/ui', docs: '/docs', openapi: '/openapi.json', health: '/health' });
  });

  it('serves the page and its two files, and nothing else from the folder', async () => {
    const { app } = await build({ token: 'secret-token' });
    const page = await app.inject({ method: 'GET', url: '/ui' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(page.body).not.toMatch(/https?:\/\//);
    expect((await app.inject({ method: 'GET', url: '/ui/console.js' })).headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect((await app.inject({ method: 'GET', url: '/ui/console.css' })).headers['content-type']).toBe('text/css; charset=utf-8');
    for (const url of ['/ui/index.html', '/ui/..%2F..%2Fpackage.json', '/ui/.gitignore', '/ui/console.js.map']) {
      const response = await app.inject({ method: 'GET', url });
      expect(response.statusCode, url).toBe(404);
      expect(typeof response.json().detail.reason).toBe('string');
    }
  });
});
