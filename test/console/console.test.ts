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

  it('edits a memory in place, shows its history, scopes and metadata, filters, loads more through the cursor and deletes by filter after a dry-run count', async () => {
    const { url, service } = await serve();
    const key = await service.addMemory({ userId: 'ops', text: 'Rotate the deploy key monthly', tags: ['ops'], agentId: 'ops-bot', runId: 'run-1', metadata: { project: 'styx' }, ttlSeconds: 86_400 });
    for (let i = 0; i < 5; i++) await service.addMemory({ userId: 'ops', text: `Scribe note ${i}`, agentId: 'scribe' });
    for (const text of ['Lethe kickoff on Monday', 'Lethe budget approved']) await service.addMemory({ userId: 'ops', text, metadata: { project: 'lethe' } });
    const { page, close } = await openConsole(url);
    await page.locator('#token-view').waitFor({ state: 'visible' });
    await page.fill('#token', TOKEN);
    await page.click('#token-form button');
    await page.locator('#views').waitFor({ state: 'visible' });
    await page.fill('#user', 'ops');
    await page.dispatchEvent('#user', 'change');
    const texts = () => page.locator('#browse-results li.memory .text').allTextContents();
    const count = (n: number) => page.waitForFunction((expected) => document.querySelectorAll('#browse-results li.memory').length === expected, n);

    // Load more: pages of 3 through the cursor, until none is left.
    await page.click('nav button[data-view=browse]');
    await page.fill('#browse-limit', '3');
    await page.click('#browse-form button[type=submit]');
    await count(3);
    expect(await page.locator('#browse-more').isVisible()).toBe(true);
    await page.click('#browse-more');
    await count(6);
    await shot(page, '8-browse-load-more');
    await page.click('#browse-more');
    await count(8);
    expect(await page.locator('#browse-more').isHidden()).toBe(true);
    expect(await texts()).toEqual(['Lethe budget approved', 'Lethe kickoff on Monday', ...[4, 3, 2, 1, 0].map((i) => `Scribe note ${i}`), 'Rotate the deploy key monthly']);

    // Filters: agent, run, tag, metadata key=value, a time window; the memory shows its scopes, metadata and expiry.
    await page.fill('#browse-limit', '50');
    await page.fill('#browse-agent', 'ops-bot');
    await page.fill('#browse-run', 'run-1');
    await page.fill('#browse-tag', 'ops');
    await page.fill('#browse-meta', 'project=styx');
    await page.fill('#browse-since', '2020-01-01');
    await page.click('#browse-form button[type=submit]');
    await count(1);
    const item = page.locator('#browse-results li.memory').first();
    expect(await item.locator('.scope').allTextContents()).toEqual(['agent ops-bot', 'run run-1']);
    expect(await item.locator('.meta-pair').allTextContents()).toEqual(['project="styx"']);
    expect(await item.locator('.expires').textContent()).toMatch(/^expires \d{4}-\d\d-\d\d \d\d:\d\d$/);
    await shot(page, '9-browse-filtered');
    await page.fill('#browse-until', '2021-01-01');
    await page.click('#browse-form button[type=submit]');
    await page.locator('#browse-results li.empty').waitFor();

    // Edit in place: text, tags, importance, metadata, scopes (empty clears) and expiry (empty: never).
    await page.fill('#browse-until', '');
    await page.click('#browse-form button[type=submit]');
    await count(1);
    await item.locator('button.edit').click();
    await item.locator('form.edit').waitFor();
    await item.locator('.edit-text').fill('Rotate the deploy key every two weeks');
    await item.locator('.edit-tags').fill('ops, security');
    await item.locator('.edit-importance').fill('0.9');
    await item.locator('.edit-metadata').fill('{"project": "styx", "owner": "ana"}');
    await item.locator('.edit-agent').fill('sec-bot');
    await item.locator('.edit-run').fill('');
    await item.locator('.edit-expires').fill('');
    await shot(page, '10-edit');
    await item.locator('button.save-edit').click();
    await page.locator('#status', { hasText: 'Saved as version 2.' }).waitFor();
    const edited = await service.get('ops', key.id);
    expect(edited).toMatchObject({ text: 'Rotate the deploy key every two weeks', tags: ['ops', 'security'], importance: 0.9, metadata: { project: 'styx', owner: 'ana' }, agent_id: 'sec-bot', version: 2 });
    expect(edited.run_id).toBeUndefined();
    expect(edited.expires_at).toBeUndefined();
    const saved = page.locator(`#browse-results li[data-id="${key.id}"]`);
    expect(await saved.locator('.scope').allTextContents()).toEqual(['agent sec-bot']);

    // History: every version, oldest first.
    await saved.locator('button.history').click();
    await saved.locator('ol.history li').nth(1).waitFor();
    expect(await saved.locator('ol.history li .text').allTextContents()).toEqual(['Rotate the deploy key monthly', 'Rotate the deploy key every two weeks']);
    expect(await saved.locator('ol.history li').first().textContent()).toContain('agent ops-bot, run run-1');
    await shot(page, '11-history');

    // Delete by filter: the dry-run count first; cancel deletes nothing, yes deletes the matches.
    for (const id of ['#browse-agent', '#browse-run', '#browse-tag', '#browse-since']) await page.fill(id, '');
    await page.fill('#browse-meta', 'project=lethe');
    await page.click('#browse-form button[type=submit]');
    await count(2);
    await page.click('#browse-delete');
    await page.locator('#delete-confirm', { hasText: '2 memories match these filters. Delete them for good?' }).waitFor();
    await shot(page, '12-delete-by-filter');
    await page.click('#delete-confirm button.cancel-delete-matching');
    expect((await service.list({ userId: 'ops', limit: 50 })).length).toBe(8);
    await page.click('#browse-delete');
    await page.click('#delete-confirm button.confirm-delete-matching');
    await page.locator('#status', { hasText: 'Deleted 2.' }).waitFor();
    await page.locator('#browse-results li.empty').waitFor();
    expect((await service.list({ userId: 'ops', limit: 50 })).map((memory) => memory.text)).not.toContain('Lethe budget approved');
    expect((await service.list({ userId: 'ops', limit: 50 })).length).toBe(6);
    await page.fill('#browse-meta', '');
    await page.click('#browse-delete');
    await page.locator('#status.error', { hasText: 'Delete by filter needs an agent, a run, a tag or a metadata pair first.' }).waitFor();
    await close();
    console.log(`console screenshots: ${shots}`);
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
