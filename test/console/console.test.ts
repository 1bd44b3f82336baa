import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import chromium from '@sparticuz/chromium';
import { chromium as playwright, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { build } from '../support/helper.js';

/**
 * The console in a real headless Chromium (the one the @sparticuz/chromium dev dependency ships,
 * unpacked on first use), against a real server on a loopback port. Never skipped: a missing
 * browser is a failure. Screenshots of each view go to .console-shots/ (git-ignored) for a look.
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const shots = path.join(root, '.console-shots');
const TOKEN = 'console-test-token';

let browser: Browser;

beforeAll(async () => {
  await mkdir(shots, { recursive: true });
  // --single-process suits a serverless function's one page; this test opens a context per session.
  const args = chromium.args.filter((arg) => arg !== '--single-process');
  browser = await playwright.launch({ executablePath: await chromium.executablePath(), args, headless: true });
});

afterAll(async () => {
  await browser?.close();
});

async function serve() {
  const built = await build({ token: TOKEN });
  const url = await built.app.listen({ host: '127.0.0.1', port: 0 });
  return { ...built, url };
}

async function openConsole(url: string): Promise<{ page: Page; close: () => Promise<void> }> {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  const page = await context.newPage();
  const errors: string[] = [];
  page.on('pageerror', (error) => errors.push(error.message));
  await page.goto(`${url}/`);
  expect(new URL(page.url()).pathname).toBe('/ui');
  return {
    page,
    close: async () => {
      await context.close();
      expect(errors).toEqual([]);
    },
  };
}

const shot = (page: Page, name: string) => page.screenshot({ path: path.join(shots, `${name}.png`), fullPage: true });

describe('web console', () => {
  it('asks for the token once, keeps it for the session only, and walks every view', async () => {
    const { url, service } = await serve();
    await service.addMemory({ userId: 'caroline', text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.8 });
    await service.addMemory({ userId: 'caroline', text: 'Caroline works as a counsellor at a youth centre', tags: ['work'] });
    await service.addMemory({ userId: 'caroline', text: 'Caroline is learning to play the <b>violin</b> <img src=x onerror="window.pwned=1">', tags: ['music'] });
    await service.addMemory({ userId: 'melanie', text: 'Melanie paints sunsets' });

    const { page, close } = await openConsole(url);
    // Token: the page loads without it; the API refuses until it is given.
    await page.locator('#token-view').waitFor({ state: 'visible' });
    expect(await page.locator('#status').textContent()).toContain('Missing credentials');
    await shot(page, '1-token');
    await page.fill('#token', 'wrong-token');
    await page.click('#token-form button');
    await page.locator('#status.error', { hasText: 'Invalid credentials' }).waitFor();
    await page.fill('#token', TOKEN);
    await page.click('#token-form button');
    await page.locator('#views').waitFor({ state: 'visible' });
    expect(await page.evaluate(() => sessionStorage.getItem('memorypool.token'))).toBe(TOKEN);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);

    // Pick a user from the ones the pool holds.
    expect(await page.locator('#known-users option').evaluateAll((options) => options.map((o) => (o as HTMLOptionElement).value))).toEqual(['caroline', 'melanie']);
    await page.fill('#user', 'caroline');
    await page.dispatchEvent('#user', 'change');

    // Search.
    await page.click('nav button[data-view=search]');
    await page.fill('#search-query', 'what is the dog called');
    await page.click('#search-form button[type=submit]');
    const firstHit = page.locator('#search-results li.memory').first();
    await firstHit.waitFor();
    expect(await firstHit.locator('.text').textContent()).toBe('Caroline adopted a rescue dog named Max');
    expect(await firstHit.locator('.score').textContent()).toMatch(/^score \d\.\d{3}$/);
    // Each hit shows its score's terms (the explain box is ticked by default).
    const terms = await firstHit.locator('table.explanation tr td:first-child').allTextContents();
    expect(terms).toContain('dense');
    expect(terms).toContain('importance');
    await shot(page, '2-search');
    await page.fill('#search-tag', 'work');
    await page.click('#search-form button[type=submit]');
    // The earlier results hold the same memory: wait for the list to be replaced, not for the text.
    await page.waitForFunction(() => document.querySelectorAll('#search-results li.memory').length === 1);
    expect(await page.locator('#search-results li.memory .text').textContent()).toBe('Caroline works as a counsellor at a youth centre');

    // Browse: newest first; memory text is shown as text, never run as markup.
    await page.click('nav button[data-view=browse]');
    await page.locator('#browse-results li.memory').first().waitFor();
    expect(await page.locator('#browse-results li.memory .text').allTextContents()).toEqual([
      'Caroline is learning to play the <b>violin</b> <img src=x onerror="window.pwned=1">',
      'Caroline works as a counsellor at a youth centre',
      'Caroline adopted a rescue dog named Max',
    ]);
    expect(await page.locator('#browse-results img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { pwned?: number }).pwned)).toBeUndefined();
    await shot(page, '3-browse');
    await page.fill('#browse-tag', 'pets');
    await page.click('#browse-form button[type=submit]');
    await page.waitForFunction(() => document.querySelectorAll('#browse-results li.memory').length === 1);
    expect(await page.locator('#browse-results li.memory .text').textContent()).toBe('Caroline adopted a rescue dog named Max');

    // Delete, with a confirmation: cancel keeps it, yes removes it for good.
    const dog = page.locator('#browse-results li.memory').first();
    const dogId = (await dog.getAttribute('data-id'))!;
    await dog.locator('button.delete').click();
    await dog.locator('.confirm', { hasText: 'Delete this memory for good?' }).waitFor();
    await shot(page, '4-delete-confirm');
    await dog.locator('button.cancel-delete').click();
    await dog.locator('button.delete').waitFor();
    expect((await service.get('caroline', dogId)).text).toContain('dog');
    await dog.locator('button.delete').click();
    await dog.locator('button.confirm-delete').click();
    await page.locator('#status', { hasText: 'Memory deleted.' }).waitFor();
    expect(await page.locator(`#browse-results li[data-id="${dogId}"]`).count()).toBe(0);
    await expect(service.get('caroline', dogId)).rejects.toMatchObject({ code: 'NOT_FOUND' });

    // Add.
    await page.click('nav button[data-view=add]');
    await page.fill('#add-text', 'Caroline is moving to Lisbon in June');
    await page.fill('#add-tags', 'plans, travel');
    await page.fill('#add-importance', '0.9');
    await page.click('#add-form button[type=submit]');
    await page.locator('#status', { hasText: 'Stored for caroline.' }).waitFor();
    const added = (await service.list({ userId: 'caroline', limit: 1 }))[0];
    expect(added).toMatchObject({ text: 'Caroline is moving to Lisbon in June', tags: ['plans', 'travel'], importance: 0.9, source: 'console' });
    await shot(page, '5-add');
    await page.fill('#add-text', 'x');
    await page.fill('#add-importance', '3');
    await page.evaluate(() => (document.querySelector('#add-form') as HTMLFormElement).noValidate = true);
    await page.click('#add-form button[type=submit]');
    await page.locator('#status.error', { hasText: 'importance must be between 0 and 1' }).waitFor();

    // Stats.
    await page.click('nav button[data-view=stats]');
    await page.locator('#stats-table tbody tr').first().waitFor();
    expect(await page.locator('#stats-summary dd').first().textContent()).toBe('4');
    expect(await page.locator('#stats-table tbody tr td:first-child').allTextContents()).toEqual(['caroline', 'melanie']);
    expect(await page.locator('#stats-table tbody tr td:last-child').allTextContents()).toEqual(['none (scored exhaustively)', 'none (scored exhaustively)']);
    await shot(page, '6-stats');

    // The token survives a reload within the session, and a new session asks again.
    await page.reload();
    await page.locator('#views').waitFor({ state: 'visible' });
    expect(await page.locator('#token-view').isHidden()).toBe(true);
    expect(await page.inputValue('#user')).toBe('caroline');
    await close();
    const fresh = await openConsole(url);
    await fresh.page.locator('#token-view').waitFor({ state: 'visible' });
    await fresh.close();
  });

  it('renders the API reference at /docs offline', async () => {
    const { url } = await serve();
    const context = await browser.newContext({ viewport: { width: 1100, height: 900 } });
    const page = await context.newPage();
    const outside: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(url) && !request.url().startsWith('data:')) outside.push(request.url());
    });
    await page.goto(`${url}/docs`);
    await page.locator('.opblock-summary-path', { hasText: '/mem/search' }).first().waitFor();
    expect(await page.locator('.opblock').count()).toBeGreaterThan(15);
    await shot(page, '7-docs');
    await context.close();
    expect(outside).toEqual([]);
  });
});
