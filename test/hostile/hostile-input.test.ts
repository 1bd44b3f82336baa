import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { build, openService, tempDir } from '../support/helper.js';
import { request, sleep, startServerProcess } from '../support/server-process.js';

/**
 * What agents on the open network may send: oversized, deeply nested, huge, badly encoded,
 * strange-charactered and path-like input. Each is a clear 4xx or a correct store, never a 500,
 * a crash, or a file outside the data directory.
 */

type Injected = Awaited<ReturnType<Awaited<ReturnType<typeof build>>['app']['inject']>>;

const validAdd = (overrides: Record<string, unknown> = {}) => ({
  request_id: 'r1',
  user_id: 'hostile-user',
  session_id: 's1',
  messages: [{ role: 'Caroline', content: 'I adopted a greyhound called Pixel.', timestamp: 1_704_067_200_000 }],
  ...overrides,
});

/** A POST body for each route that takes one, built around a value placed in a declared field. */
const bodyRoutes: Array<[string, (value: unknown) => unknown]> = [
  ['/add', (value) => validAdd({ messages: [{ role: 'Caroline', content: value }] })],
  ['/search', (value) => ({ query: value, user_id: 'hostile-user', top_k: 5 })],
  ['/mem', (value) => ({ text: value, user_id: 'hostile-user' })],
  ['/invoke', (value) => ({ params: { action: 'search', query: value, user_id: 'hostile-user' } })],
];

function post(url: string, payload: string | Buffer, headers: Record<string, string> = {}) {
  return { method: 'POST' as const, url, payload, headers: { 'content-type': 'application/json', ...headers } };
}

function expectErrorBody(response: Injected, status: number | ((status: number) => boolean)): void {
  if (typeof status === 'number') expect(response.statusCode, response.body.slice(0, 300)).toBe(status);
  else expect(status(response.statusCode), `${response.statusCode} ${response.body.slice(0, 300)}`).toBe(true);
  const body = response.json();
  if (response.statusCode === 422) expect(Array.isArray(body.detail)).toBe(true);
  else expect(typeof body.detail.reason).toBe('string');
}

const is4xx = (status: number) => status >= 400 && status < 500;

describe('bodies over the configured limit', () => {
  it.each(bodyRoutes)('%s answers 413 with the error body and stores nothing', async (url, body) => {
    const { app, service } = await build({ bodyLimit: 4096 });
    const response = await app.inject(post(url, JSON.stringify(body('word '.repeat(2000)))));
    expectErrorBody(response, 413);
    expect(response.json().detail.reason).toMatch(/too large/i);
    expect(service.count).toBe(0);
  });

  it('the default limit (8 MiB) holds too, and a body just under it is accepted', async () => {
    const { app } = await build();
    const over = JSON.stringify(validAdd({ padding: 'x'.repeat(8 * 1024 * 1024) }));
    expectErrorBody(await app.inject(post('/add', over)), 413);
    const under = JSON.stringify(validAdd({ padding: 'x'.repeat(8 * 1024 * 1024 - 1024) }));
    expect((await app.inject(post('/add', under))).statusCode).toBe(200);
  });
});

describe('deeply nested JSON', () => {
  const depth = 100_000;
  const nestings: Array<[string, string]> = [
    ['arrays', '['.repeat(depth) + ']'.repeat(depth)],
    ['objects', '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)],
    ['mixed', '[{"a":'.repeat(depth / 2) + 'null' + '}]'.repeat(depth / 2)],
    ['unterminated', '['.repeat(depth)],
  ];

  it.each(nestings)('%s, 100k levels deep, are a 400 with the error body on every route', async (_name, nested) => {
    const { app, service } = await build();
    for (const url of ['/add', '/search', '/mem', '/invoke']) {
      expectErrorBody(await app.inject(post(url, nested)), 400);
      // The same nesting inside an otherwise valid body, in an undeclared field.
      const inside = JSON.stringify(validAdd()).replace(/}$/, `,"metadata":${nested}}`);
      expectErrorBody(await app.inject(post(url, inside)), 400);
    }
    expect(service.count).toBe(0);
    expect((await app.inject({ method: 'GET', url: '/health' })).statusCode).toBe(200);
  });

  it('moderate nesting in an undeclared field is ignored, as the contract says', async () => {
    const { app } = await build();
    const inside = JSON.stringify(validAdd()).replace(/}$/, `,"metadata":${'['.repeat(40)}1${']'.repeat(40)}}`);
    expect((await app.inject(post('/add', inside))).statusCode).toBe(200);
  });
});

describe('repeated keys', () => {
  it('the last one wins, as in JSON.parse, including how its number was written', async () => {
    const { app } = await build();
    const search = (text: string) => app.inject(post('/search', text));
    expect((await search('{"query":"x","user_id":"u","top_k":100.0,"top_k":5}')).statusCode).toBe(200);
    expectErrorBody(await search('{"query":"x","user_id":"u","top_k":5,"top_k":100.0}'), 422);
    const add = await app.inject(post('/add', '{"request_id":"a","request_id":"b","user_id":"u","session_id":"s","messages":[{"role":"r","content":"c"}]}'));
    expect(add.json().request_id).toBe('b');
  });
});

describe('huge strings', () => {
  it('a 190 KB message (under the 200,000-character limit) is stored whole, as units of at most 70 words', async () => {
    const { app, service } = await build();
    const content = Array.from({ length: 28_000 }, (_, i) => `word${i % 97}`).join(' ') + '.';
    const response = await app.inject(post('/add', JSON.stringify(validAdd({ messages: [{ role: 'Caroline', content }] }))));
    expect(response.statusCode).toBe(200);
    const units = await service.list({ userId: 'hostile-user', limit: 1000 });
    expect(units.length).toBeGreaterThan(100);
    for (const unit of units) expect(unit.text.split(/\s+/).length).toBeLessThanOrEqual(70);
    const words = units.sort((a, b) => a.part! - b.part!).flatMap((unit) => unit.text.split(/\s+/));
    expect(words.join(' ')).toBe(content);
  });

  it('100 KB ids are stored exactly (the folder name stays short) and stay idempotent; a 1 MB query is answered', async () => {
    const dataDir = await tempDir();
    const { app } = await build({ dataDir });
    const userId = 'u'.repeat(100_000);
    const requestId = 'r'.repeat(100_000);
    const body = JSON.stringify(validAdd({ user_id: userId, request_id: requestId, session_id: 's'.repeat(100_000) }));
    for (let attempt = 0; attempt < 2; attempt++) {
      const response = await app.inject(post('/add', body));
      expect(response.statusCode).toBe(200);
      expect(response.json().user_id).toBe(userId);
    }
    const listed = (await app.inject(post('/invoke', JSON.stringify({ params: { action: 'list', user_id: userId } })))).json();
    expect(listed).toHaveLength(1);
    expect(listed[0].user_id).toBe(userId);
    for (const entry of await readdir(path.join(dataDir, 'users'))) expect(entry.length).toBeLessThan(100);

    const query = 'greyhound called pixel and other dogs '.repeat(28_000);
    const search = await app.inject(post('/search', JSON.stringify({ query, user_id: userId, top_k: 5 })));
    expect(search.statusCode).toBe(200);
    expect(search.json().data[0].content).toContain('Pixel');
  });
});

describe('invalid UTF-8', () => {
  const sequences: Array<[string, number[]]> = [
    ['a stray continuation byte', [0x80]],
    ['0xFF', [0xff, 0xfe]],
    ['an overlong "/"', [0xc0, 0xaf]],
    ['an encoded surrogate', [0xed, 0xa0, 0x80]],
    ['a truncated sequence', [0xe2, 0x82]],
    ['a code point above U+10FFFF', [0xf4, 0x90, 0x80, 0x80]],
  ];

  it.each(sequences)('%s inside a string is a 400 with the error body on every route', async (_name, bytes) => {
    const { app, service } = await build();
    for (const [url, body] of bodyRoutes) {
      const [before, after] = JSON.stringify(body('MARK')).split('MARK');
      const payload = Buffer.concat([Buffer.from(before + 'ok '), Buffer.from(bytes), Buffer.from(' ok' + after)]);
      const response = await app.inject(post(url, payload));
      expectErrorBody(response, 400);
      expect(response.json().detail.reason).toMatch(/UTF-8/);
    }
    expect(service.count).toBe(0);
  });

  it('badly percent-encoded or overlong paths and query strings are a 4xx with the error body (or a correct answer), never a 500', async () => {
    const { app } = await build();
    const urls = ['/mem/list?user_id=%FF%FE', '/mem/search?query=%C0%AF&user_id=x', '/mem/%FF?user_id=x', '/mem/%E2%82?user_id=x', '/mem/list?user_id=%', '/users/%ED%A0%80', `/mem/${'x'.repeat(3000)}?user_id=x`, `/users/${'y'.repeat(3000)}`];
    for (const url of urls) {
      for (const method of ['GET', 'DELETE'] as const) {
        const response = await app.inject({ method, url });
        expect(response.statusCode, `${method} ${url}: ${response.body}`).toBeLessThan(500);
        if (response.statusCode >= 400) expectErrorBody(response, is4xx);
      }
    }
  });
});

describe('odd but valid characters round-trip exactly', () => {
  const texts = [
    'controls: \u0001\u0007\u001b[31mred\u001b[0m \u007f \u0085 NUL:\u0000 tab:\t newline:\n return:\r end',
    'emoji: 😀 👩‍👩‍👧‍👦 🏳️‍🌈 🇯🇵 skin tones 👍🏽 and a keycap 1️⃣',
    'right-to-left: שלום עולם, مرحبا بالعالم \u202eoverride\u202c \u200fmark\u200e and زبان فارسی',
    'separators: line\u2028para\u2029zero-width\u200bjoiner\u200dBOM\ufeffend',
    'combining: e\u0301 vs é, Å vs A\u030a, ﬁ ligature, ｆｕｌｌｗｉｄｔｈ',
  ];

  it('through /add, /mem and /invoke; read back by list, get and search; and after a restart', async () => {
    const dataDir = await tempDir();
    const { app, service } = await build({ dataDir });
    const userId = 'ユーザー 👤 \u202eevil\u202c';
    const expected: string[] = [];
    for (const [i, text] of texts.entries()) {
      const add = await app.inject(post('/add', JSON.stringify(validAdd({ request_id: `odd-${i}`, user_id: userId, session_id: `séance ${i} 🎭`, messages: [{ role: 'Zoë 🦊', content: text }] }))));
      expect(add.statusCode, add.body).toBe(200);
      expect(add.json()).toMatchObject({ user_id: userId, session_id: `séance ${i} 🎭` });
      const mem = await app.inject(post('/mem', JSON.stringify({ user_id: userId, text, tags: ['🏷️', 'עברית'] })));
      expect(mem.statusCode).toBe(201);
      expect(mem.json().text).toBe(text.trim());
      const got = await app.inject({ method: 'GET', url: `/mem/${mem.json().id}?user_id=${encodeURIComponent(userId)}` });
      expect(got.json().text).toBe(text.trim());
      const invoked = await app.inject(post('/invoke', JSON.stringify({ params: { action: 'add', user_id: userId, text } })));
      expect(invoked.json().text).toBe(text.trim());
      expected.push(text.trim(), text.trim(), text.trim());
    }
    const listed = (await app.inject({ method: 'GET', url: `/mem/list?user_id=${encodeURIComponent(userId)}&limit=100` })).json();
    expect(listed.map((memory: { text: string }) => memory.text).sort()).toEqual([...expected].sort());
    for (const memory of listed) expect(memory.user_id).toBe(userId);
    const search = (await app.inject(post('/search', JSON.stringify({ query: 'right-to-left שלום', user_id: userId, top_k: 100 })))).json();
    // Each text is stored three times (its /add copy says who spoke): /search answers one copy of it.
    const copies = search.data.filter((hit: { content: string }) => hit.content.endsWith(texts[2]));
    expect(copies).toHaveLength(1);
    expect(copies[0].content).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d\] (Zoë 🦊: )?right-to-left/);

    await service.close();
    const reopened = await openService({ dataDir });
    const reloaded = await reopened.list({ userId, limit: 100 });
    expect(reloaded.map((memory) => memory.text).sort()).toEqual([...expected].sort());
    expect(reloaded.filter((memory) => memory.role !== undefined).every((memory) => memory.role === 'Zoë 🦊')).toBe(true);
  });

  it('a raw (unescaped) control character inside a JSON string is a 400, not a 500', async () => {
    const { app } = await build();
    const payload = Buffer.from(JSON.stringify(validAdd()).replace('Pixel', 'Pi\u0000x\u0001el'));
    expectErrorBody(await app.inject(post('/add', payload)), 400);
  });
});

describe('ids with ../ or NUL', () => {
  const hostileIds = ['../../../etc/passwd', '..', '.', '/', '/etc/passwd', 'a/../../b', '..\\..\\windows', 'nul\u0000byte', '\u0000', '%2e%2e%2f', '~root', 'users', 'con', '.memorypool', '  ../  '];

  it('are a clear 4xx or a correct, contained store on every route; no file lands outside the data directory', async () => {
    const root = await tempDir('memorypool-escape-');
    const dataDir = path.join(root, 'outer', 'inner', 'data');
    const { app, service } = await build({ dataDir });
    const bystander = await app.inject(post('/add', JSON.stringify(validAdd({ user_id: 'bystander', request_id: 'keep' }))));
    expect(bystander.statusCode).toBe(200);

    for (const [i, id] of hostileIds.entries()) {
      const responses: Injected[] = [];
      const q = encodeURIComponent(id);
      const addAs = await app.inject(post('/add', JSON.stringify(validAdd({ user_id: id, request_id: id, session_id: id, messages: [{ role: id, content: `hostile ${i}` }] }))));
      responses.push(addAs);
      if (addAs.statusCode === 200) {
        expect(addAs.json()).toEqual({ success: true, request_id: id, user_id: id, session_id: id });
        const listed = await service.list({ userId: id, limit: 10 });
        expect(listed.map((memory) => [memory.user_id, memory.text])).toEqual([[id, `hostile ${i}`]]);
      }
      const mem = await app.inject(post('/mem', JSON.stringify({ user_id: id, text: `mem ${i}`, source: id, tags: [id] })));
      responses.push(mem);
      responses.push(await app.inject(post('/search', JSON.stringify({ query: 'hostile', user_id: id, top_k: 5 }))));
      responses.push(await app.inject({ method: 'GET', url: `/mem/search?query=hostile&user_id=${q}` }));
      responses.push(await app.inject({ method: 'GET', url: `/mem/list?user_id=${q}` }));
      responses.push(await app.inject({ method: 'GET', url: `/mem/stats?user_id=${q}` }));
      // The id as a memory id, for its own user and for the bystander.
      for (const owner of [id, 'bystander']) {
        responses.push(await app.inject({ method: 'GET', url: `/mem/${q}?user_id=${encodeURIComponent(owner)}` }));
        responses.push(await app.inject({ method: 'DELETE', url: `/mem/${q}?user_id=${encodeURIComponent(owner)}` }));
        responses.push(await app.inject(post('/invoke', JSON.stringify({ params: { action: 'get', id, user_id: owner } }))));
        responses.push(await app.inject(post('/invoke', JSON.stringify({ params: { action: 'delete', id, user_id: owner } }))));
      }
      if (mem.statusCode === 201) {
        const memoryId = mem.json().id;
        responses.push(await app.inject({ method: 'DELETE', url: `/mem/${memoryId}?user_id=${q}` }));
        expect(responses.at(-1)!.statusCode).toBe(200);
      }
      responses.push(await app.inject({ method: 'DELETE', url: `/users/${q}` }));
      for (const response of responses) {
        expect(response.statusCode, `${id}: ${response.body.slice(0, 200)}`).toBeLessThan(500);
        if (response.statusCode >= 400) expectErrorBody(response, is4xx);
      }
    }

    // The bystander is untouched by all of it.
    expect((await service.list({ userId: 'bystander', limit: 10 })).map((memory) => memory.text)).toEqual(['I adopted a greyhound called Pixel.']);
    await service.flushIndexes();

    // Every file under the temporary root is the data directory's format stamp, a known file of one
    // user's folder in data/users, that folder's seq floor or locks in data/sync, named by its
    // hash, or this process's lock owner file in data/sync/owners (a lock is gone once released,
    // but the index work of a user deleted a moment ago may still hold its cache lock).
    const files = await walk(root);
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      expect(path.relative(root, file)).toMatch(
        /^outer\/inner\/data\/(format\.json|users\/[A-Za-z0-9_-]{1,40}-[0-9a-f]{16}\/(memories\.jsonl|user\.json|vectors\.hnsw|vectors\.meta\.json|quarantine\.jsonl)|sync\/([0-9a-f]{16}\.(next-seq|lock|cache\.lock)|changes\.jsonl|pool-figures\.json|owners\/[0-9]+-[0-9]+-[0-9a-f]{12}\.owner))$/,
      );
    }
    expect(await readdir(root)).toEqual(['outer']);
    expect(await readdir(path.join(root, 'outer'))).toEqual(['inner']);
    expect(await readdir(path.join(root, 'outer', 'inner'))).toEqual(['data']);
    expect((await readdir(dataDir)).sort()).toEqual(['format.json', 'sync', 'users']);
  });
});

async function walk(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await walk(full)));
    else out.push(full);
  }
  return out;
}

/**
 * Input that costs the server far more than it costs the sender: one request must not freeze
 * it for everyone. Real processes, so a frozen server is observed from outside (and killed
 * after the test) rather than freezing the test runner.
 */
describe('input that is cheap to send and expensive to process', () => {
  async function expectResponsiveWhile(send: (url: string) => Promise<{ status: number }>): Promise<void> {
    const server = await startServerProcess({ dataDir: await tempDir() });
    const seed = await request(`${server.url}/add`, { body: validAdd() });
    expect(seed.status).toBe(200);
    const started = Date.now();
    const hostile = send(server.url).then(
      (response) => ({ status: response.status, ms: Date.now() - started }),
      (error: Error) => ({ status: 0, ms: Date.now() - started, error: error.message }),
    );
    await sleep(200);
    const health = await request(`${server.url}/health`, { timeoutMs: 2_000 }).then(
      (response) => response.status,
      () => 'no answer within 2 s',
    );
    const outcome = await hostile;
    expect({ health, outcome: { status: outcome.status, withinThreeSeconds: outcome.ms < 3_000 } }).toEqual({ health: 200, outcome: { status: 200, withinThreeSeconds: true } });
  }

  it('a message holding one 100 KB word (a long "hahaha…", a run of letters) is stored promptly', async () => {
    await expectResponsiveWhile((url) =>
      request(`${url}/add`, { body: validAdd({ request_id: 'long-word', messages: [{ role: 'Caroline', content: `lol ${'ha'.repeat(50_000)}` }] }), timeoutMs: 3_000 }),
    );
  });

  it('a search whose 300 KB query is full of dates is answered promptly', async () => {
    await expectResponsiveWhile((url) =>
      request(`${url}/search`, { body: { query: 'what did we do in may 2023 and last week '.repeat(7_500), user_id: 'hostile-user', top_k: 5 }, timeoutMs: 3_000 }),
    );
  });
});
