import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { hookWants, parseWebhooks, readWebhooksFile } from '../../src/webhooks/webhooks-file.js';
import { signatureHeader } from '../../src/webhooks/signature.js';
import { createHmac } from 'node:crypto';
import { tempDir } from '../support/helper.js';
import { startServerProcess } from '../support/server-process.js';

describe('MEMORYPOOL_WEBHOOKS_FILE', () => {
  it('reads the hooks, each with a stable id from its URL unless it names one', async () => {
    const file = path.join(await tempDir(), 'hooks.json');
    await writeFile(file, JSON.stringify([{ url: 'https://example.com/a', secret: 's1' }, { id: 'b', url: 'https://example.com/a', secret: 's2', events: ['added', 'added'], users: ['alice'] }]));
    const hooks = readWebhooksFile(file);
    expect(hooks).toEqual([
      { id: expect.stringMatching(/^h-[0-9a-f]{16}$/), url: 'https://example.com/a', secret: 's1', events: null, users: null },
      { id: 'b', url: 'https://example.com/a', secret: 's2', events: ['added'], users: ['alice'] },
    ]);
    expect(parseWebhooks([{ url: 'https://example.com/a', secret: 'other' }], 'x')[0].id).toBe(hooks[0].id);
    expect(hookWants(hooks[1], { type: 'added', user_id: 'alice' })).toBe(true);
    expect(hookWants(hooks[1], { type: 'deleted', user_id: 'alice' })).toBe(false);
    expect(hookWants(hooks[1], { type: 'added', user_id: 'bob' })).toBe(false);
  });

  it('refuses a bad file with the place named and the secrets never quoted', async () => {
    const dir = await tempDir();
    const bad = async (content: string) => {
      const file = path.join(dir, `${Math.random()}.json`);
      await writeFile(file, content);
      return () => readWebhooksFile(file);
    };
    expect(() => readWebhooksFile(path.join(dir, 'missing.json'))).toThrow(/cannot be read \(ENOENT\)/);
    expect(await bad('[{"url": "https://x", "secret": "very-secret"')).toThrow(/is not valid JSON/);
    expect(await bad('[{"url": "https://x", "secret": "very-secret"')).not.toThrow(/very-secret/);
    expect(await bad('{"url": "https://x"}')).toThrow(/\(top level\): must be a JSON list/);
    expect(await bad('[{"url": "ftp://x", "secret": "s"}]')).toThrow(/\[0\]\.url: must be an http:\/\/ or https:\/\/ URL/);
    expect(await bad('[{"url": "https://x", "secret": " "}]')).toThrow(/\[0\]\.secret: must not be empty/);
    expect(await bad('[{"url": "https://x", "secret": "s", "events": ["created"]}]')).toThrow(/\[0\]\.events\.\[0\]|\[0\]\.events\[0\]/);
    expect(await bad('[{"url": "https://x", "secret": "s", "extra": 1}]')).toThrow(/\[0\]/);
    expect(await bad('[{"url": "https://x", "secret": "s"}, {"url": "https://x", "secret": "t"}]')).toThrow(/\[1\]: the same id as \[0\]/);
  });
});

describe('a server with a bad webhooks file', () => {
  it('does not start, and says which hook is wrong and why', async () => {
    const file = path.join(await tempDir(), 'hooks.json');
    await writeFile(file, JSON.stringify([{ url: 'https://ok.example.com/', secret: 'fine' }, { url: 'not a url', secret: 'hidden-secret', events: ['created'] }]));
    const started = startServerProcess({ dataDir: await tempDir(), env: { MEMORYPOOL_WEBHOOKS_FILE: file } });
    await expect(started).rejects.toThrow(/server exited before it was healthy \(code 1[\s\S]*Webhooks file .*hooks\.json is invalid: \[1\]\.url: must be an http:\/\/ or https:\/\/ URL; \[1\]\.events\[0\]/);
    await expect(started).rejects.not.toThrow(/hidden-secret/);
  });
});

describe('the signature', () => {
  it("is Stripe's scheme: t=<unix>,v1=hex HMAC-SHA256 of <t>.<body>", () => {
    const header = signatureHeader('key', '{"a":1}', 1_700_000_000);
    // Written out independently of signature.ts.
    const expected = createHmac('sha256', Buffer.from('key')).update(Buffer.from('1700000000.{"a":1}')).digest('hex');
    expect(header).toBe(`t=1700000000,v1=${expected}`);
  });
});
