import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/logger.js';
import { JsonlMemoryStore } from '../../src/store/jsonl-memory-store.js';
import type { MemoryStore } from '../../src/store/memory-store.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import type { HookHolder } from '../../src/store/webhook-state.js';
import { register, sleep, tempDir } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';

const holder = (name: string, pid = process.pid): HookHolder => ({ id: `${os.hostname()}:${pid}:${name}`, host: os.hostname(), pid, start: null });

const STORES: Array<[string, () => Promise<MemoryStore>]> = [
  ['JSONL', async () => new JsonlMemoryStore(await tempDir(), silentLogger())],
  ['PostgreSQL', async () => new PostgresStore({ url: await freshDatabase(), logger: silentLogger() })],
];

describe.each(STORES)('the webhooks lease and progress (%s)', (_name, open) => {
  async function opened(): Promise<MemoryStore> {
    const store = await open();
    await store.init();
    register(() => store.close());
    return store;
  }

  it('gives a hook to one holder at a time, to another once the lease lapses, and never lets the old holder write after', async () => {
    const { webhooks: state } = await opened();
    const [x, y] = [holder('x'), holder('y')];
    expect(await state.claim('h', x, 300, 7)).toMatchObject({ delivered_seq: 7, failures: 0, failed: false });
    expect(await state.claim('h', y, 300, 0)).toBeNull();
    expect(await state.save('h', x.id, { delivered_seq: 9, failures: 2, last_error: 'the receiver answered 500', failing_since: 1_000, next_try_at: 2_000, failed: false })).toBe(true);
    expect(await state.save('h', y.id, { delivered_seq: 50, failures: 0, last_error: null, failing_since: null, next_try_at: null, failed: false })).toBe(false);
    await sleep(400);
    // Lapsed: the other takes it with the progress the first saved; the first can no longer write.
    expect(await state.claim('h', y, 300, 0)).toEqual({ delivered_seq: 9, failures: 2, last_error: 'the receiver answered 500', failing_since: 1_000, next_try_at: 2_000, failed: false });
    expect(await state.save('h', x.id, { delivered_seq: 3, failures: 0, last_error: null, failing_since: null, next_try_at: null, failed: false })).toBe(false);
    expect(await state.claim('h', x, 300, 0)).toBeNull();
    // The cursor never goes back, even from the holder.
    expect(await state.save('h', y.id, { delivered_seq: 8, failures: 0, last_error: null, failing_since: null, next_try_at: null, failed: false })).toBe(true);
    const [stored] = await state.states();
    expect(stored).toMatchObject({ hook_id: 'h', delivered_seq: 9, holder: y.id });
    // A release hands it over at once.
    await state.release('h', y.id);
    expect(await state.claim('h', x, 60_000, 0)).toMatchObject({ delivered_seq: 9 });
  });

  it('keeps each hook apart', async () => {
    const { webhooks: state } = await opened();
    expect(await state.claim('a', holder('x'), 60_000, 1)).not.toBeNull();
    expect(await state.claim('b', holder('y'), 60_000, 2)).not.toBeNull();
    expect((await state.states()).map((entry) => [entry.hook_id, entry.delivered_seq]).sort()).toEqual([['a', 1], ['b', 2]]);
  });
});

describe('the webhooks lease on a data directory', () => {
  it('is taken at once from a holder whose process is gone (SIGKILL), not at its expiry', async () => {
    const store = new JsonlMemoryStore(await tempDir(), silentLogger());
    await store.init();
    register(() => store.close());
    const dead = spawnSync('true').pid!;
    expect(await store.webhooks.claim('h', holder('dead', dead), 60_000, 4)).not.toBeNull();
    expect(await store.webhooks.claim('h', holder('alive'), 60_000, 0)).toMatchObject({ delivered_seq: 4 });
    expect(await store.webhooks.claim('h', holder('other'), 60_000, 0)).toBeNull();
  });
});
