import { describe, expect, it } from 'vitest';
import type { EmbedOptions, Embedder } from '../../src/embedding/embedder.js';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { ArrivalOrder } from '../../src/memory/arrival-order.js';
import { silentLogger } from '../../src/logger.js';
import { JsonlMemoryStore } from '../../src/store/jsonl-memory-store.js';
import { openService, sleep, tempDir } from '../support/helper.js';

/** The hash embedder, but each call's vectors are handed back only when the test says so. */
class GatedEmbedder implements Embedder {
  readonly inner = new HashEmbedder();
  readonly modelId = this.inner.modelId;
  readonly dimensions = this.inner.dimensions;
  gated = false;
  readonly waiting: Array<() => void> = [];
  ready = () => this.inner.ready();
  close = () => this.inner.close();
  embed(texts: readonly string[], options?: EmbedOptions): Promise<Float32Array[]> {
    if (!this.gated) return this.inner.embed(texts, options);
    return new Promise((resolve, reject) => this.waiting.push(() => this.inner.embed(texts, options).then(resolve, reject)));
  }
  async waitFor(calls: number): Promise<void> {
    while (this.waiting.length < calls) await sleep(5);
  }
}

const SESSION_DATE = Date.UTC(2023, 4, 8, 13, 56);
/** Half of one session: every message carries the session's date, as LoCoMo's do. */
const half = (requestId: string, texts: string[]) => ({
  requestId,
  userId: 'conv',
  sessionId: 'session_1',
  messages: texts.map((content, i) => ({ role: i % 2 ? 'Melanie' : 'Caroline', content, timestamp: SESSION_DATE })),
});

describe('ArrivalOrder', () => {
  it('lets each place go in the order it was taken, one key independent of another, and forgets idle keys', async () => {
    const order = new ArrivalOrder();
    const seen: string[] = [];
    const a1 = order.enter('a');
    const a2 = order.enter('a');
    const b1 = order.enter('b');
    void a2.turn.then(() => seen.push('a2'));
    void b1.turn.then(() => seen.push('b1'));
    await a1.turn;
    await sleep(5);
    expect(seen).toEqual(['b1']);
    a1.leave();
    await a2.turn;
    expect(seen).toEqual(['b1', 'a2']);
    a2.leave();
    b1.leave();
    await sleep(0);
    expect(order.size).toBe(0);
  });
});

describe('Adds of one session sent at once', () => {
  it('are stored in the order they arrived, even when the later one is embedded first', async () => {
    const embedder = new GatedEmbedder();
    const service = await openService({ embedder });
    embedder.gated = true;
    const first = service.addConversation(half('session_1/0', ['Hey Mel! Good to see you!', 'Hi Caroline, I went to a pottery class yesterday.']));
    const second = service.addConversation(half('session_1/1', ['What did you make?', 'A little bowl for my kettle.']));
    await embedder.waitFor(2);
    // The second half's vectors come back first.
    embedder.waiting[1]();
    await sleep(20);
    embedder.waiting[0]();
    expect(await Promise.all([first, second])).toEqual([
      { stored: true, units: 2 },
      { stored: true, units: 2 },
    ]);
    embedder.gated = false;
    const newestFirst = await service.list({ userId: 'conv', limit: 10 });
    expect(newestFirst.map((memory) => memory.text)).toEqual([
      'A little bowl for my kettle.',
      'What did you make?',
      'Hi Caroline, I went to a pottery class yesterday.',
      'Hey Mel! Good to see you!',
    ]);
  });

  it('a failed earlier Add does not hold the later one back', async () => {
    const embedder = new GatedEmbedder();
    const service = await openService({ embedder });
    embedder.gated = true;
    const first = service.addConversation(half('r1', ['This Add fails to embed.']));
    const second = service.addConversation(half('r2', ['This one is stored.']));
    await embedder.waitFor(2);
    embedder.waiting[1]();
    // The first call fails: its vectors never come.
    const inner = embedder.inner.embed.bind(embedder.inner);
    embedder.inner.embed = () => Promise.reject(new Error('encoder crashed'));
    embedder.waiting[0]();
    await expect(first).rejects.toMatchObject({ code: 'EMBEDDER_UNAVAILABLE' });
    embedder.inner.embed = inner;
    expect(await second).toEqual({ stored: true, units: 1 });
    embedder.gated = false;
    expect((await service.list({ userId: 'conv', limit: 10 })).map((memory) => memory.text)).toEqual(['This one is stored.']);
  });
});

describe('Adds without timestamps', () => {
  it('take their time when they arrive, so a first Add slowed before its embedding is not dated after the second', async () => {
    const store = new JsonlMemoryStore(await tempDir(), silentLogger());
    const hasRequest = store.hasRequest.bind(store);
    // The first Add's request-id check is slow (a store under load); the second's is not.
    store.hasRequest = async (userId, requestId) => {
      if (requestId === 'first') await sleep(80);
      return hasRequest(userId, requestId);
    };
    const service = await openService({ store });
    const undated = (requestId: string, content: string) => ({ requestId, userId: 'conv', sessionId: 's', messages: [{ role: 'Caroline', content }] });
    await Promise.all([service.addConversation(undated('first', 'I went to a support group.')), service.addConversation(undated('second', 'It was powerful.'))]);
    const { units } = await store.load('conv');
    const time = (requestId: string) => Date.parse(units.find((unit) => unit.record.request_id === requestId)!.record.occurred_at!);
    expect(time('first')).toBeLessThanOrEqual(time('second'));
    // Stored in arrival order too.
    expect(units.map((unit) => unit.record.request_id)).toEqual(['first', 'second']);
  });
});
