import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { localEncoderStack } from '../../src/embedding/create-embedder.js';
import type { EmbedOptions, Embedder } from '../../src/embedding/embedder.js';
import { EncoderPool } from '../../src/embedding/encoder-pool.js';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { OnnxEmbedder } from '../../src/embedding/onnx-embedder.js';

/** A hash embedder whose calls wait until released, recording what each copy was given. */
class HeldEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  readonly calls: string[][] = [];
  closed = false;
  private readonly inner = new HashEmbedder({ dimensions: 16 });
  private held: Array<() => void> = [];
  private readonly loaded: Promise<void>;
  load: () => void = () => undefined;

  constructor(modelId = 'held', loadsAtOnce = true) {
    this.modelId = modelId;
    this.dimensions = 16;
    this.loaded = loadsAtOnce ? Promise.resolve() : new Promise((resolve) => (this.load = resolve));
  }

  ready(): Promise<void> {
    return this.loaded;
  }

  async embed(texts: readonly string[], options?: EmbedOptions): Promise<Float32Array[]> {
    this.calls.push([...texts]);
    await new Promise<void>((resolve) => this.held.push(resolve));
    return this.inner.embed(texts, options);
  }

  release(): void {
    for (const resolve of this.held.splice(0)) resolve();
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('EncoderPool', () => {
  it('sends each call to the copy with the fewest texts in flight, and answers each with its own vectors', async () => {
    const copies = [new HeldEmbedder(), new HeldEmbedder()];
    const pool = new EncoderPool(copies);
    await pool.loadedAll();
    const first = pool.embed(['a', 'b', 'c']);
    const second = pool.embed(['d']);
    const third = pool.embed(['e']);
    // The first copy holds three texts, the second one: both later calls go to the second.
    await Promise.resolve();
    expect(copies[0]!.calls).toEqual([['a', 'b', 'c']]);
    expect(copies[1]!.calls).toEqual([['d'], ['e']]);
    copies[1]!.release();
    copies[0]!.release();
    const reference = new HashEmbedder({ dimensions: 16 });
    expect(await first).toEqual(await reference.embed(['a', 'b', 'c']));
    expect(await second).toEqual(await reference.embed(['d']));
    expect(await third).toEqual(await reference.embed(['e']));
    // Both idle again: the next call goes to the first copy.
    const fourth = pool.embed(['f']);
    await Promise.resolve();
    expect(copies[0]!.calls).toHaveLength(2);
    copies[0]!.release();
    await fourth;
    await pool.close();
    expect(copies.every((copy) => copy.closed)).toBe(true);
  });

  it('is ready once its first copy has loaded, and starts no other copy unless a call asks for one', async () => {
    const copies = [new HeldEmbedder('held', false), new HeldEmbedder('held', false)];
    const started = copies.map(() => false);
    copies.forEach((copy, i) => {
      const ready = copy.ready.bind(copy);
      copy.ready = () => ((started[i] = true), ready());
    });
    const pool = new EncoderPool(copies);
    let ready = false;
    void pool.ready().then(() => (ready = true));
    const early = pool.embed(['waits for the first copy']);
    await sleep(5);
    expect(ready).toBe(false);
    expect(copies[0]!.calls).toEqual([]);
    copies[0]!.load();
    await pool.ready();
    await sleep(1);
    expect(copies[0]!.calls).toEqual([['waits for the first copy']]);
    const ingest = pool.embed(['stored']);
    const query = pool.embed(['query'], { priority: 'query', moreCopies: false });
    await sleep(1);
    copies[0]!.release();
    await Promise.all([early, ingest, query]);
    expect(started).toEqual([true, false]);
    expect(pool.copiesRunning()).toBe(1);
  });

  it('starts another copy when a call asks for one, one at a time, and sends it calls once it has loaded', async () => {
    const copies = [new HeldEmbedder(), new HeldEmbedder('held', false), new HeldEmbedder('held', false)];
    const started = copies.map(() => false);
    copies.forEach((copy, i) => {
      const ready = copy.ready.bind(copy);
      copy.ready = () => ((started[i] = true), ready());
    });
    const pool = new EncoderPool(copies);
    await pool.ready();
    const first = pool.embed(['a'], { priority: 'ingest', moreCopies: true });
    // While it loads, another ask starts no third copy, and calls still go to the first.
    const second = pool.embed(['b'], { moreCopies: true });
    await sleep(1);
    expect(started).toEqual([true, true, false]);
    expect(copies[0]!.calls).toEqual([['a'], ['b']]);
    copies[1]!.load();
    await sleep(1);
    expect(pool.copiesRunning()).toBe(2);
    expect(pool.running).toBe(2);
    const third = pool.embed(['c']);
    await sleep(1);
    // To the idle second copy.
    expect(copies[1]!.calls).toEqual([['c']]);
    expect(started).toEqual([true, true, false]);
    const fourth = pool.embed(['d'], { priority: 'query', moreCopies: true });
    await sleep(1);
    expect(started).toEqual([true, true, true]);
    copies[2]!.load();
    copies.forEach((copy) => copy.release());
    await Promise.all([first, second, third, fourth]);
    await sleep(1);
    expect(pool.copiesRunning()).toBe(3);
  });

  it('answers a call that asks for another copy even when that copy refuses to load', async () => {
    const copies = [new HeldEmbedder(), new HeldEmbedder()];
    copies[1]!.ready = () => {
      throw new Error('closed');
    };
    const pool = new EncoderPool(copies);
    await pool.ready();
    const call = pool.embed(['a'], { moreCopies: true });
    await sleep(1);
    copies[0]!.release();
    expect(await call).toHaveLength(1);
    expect(pool.copiesRunning()).toBe(1);
  });

  it('loads every copy on loadedAll()', async () => {
    const copies = [new HeldEmbedder(), new HeldEmbedder('held', false), new HeldEmbedder('held', false)];
    const pool = new EncoderPool(copies);
    const all = pool.loadedAll();
    await sleep(5);
    copies[1]!.load();
    await sleep(5);
    expect(pool.copiesRunning()).toBe(2);
    copies[2]!.load();
    await all;
    expect(pool.copiesRunning()).toBe(3);
  });

  it('takes copies of one model only', () => {
    expect(() => new EncoderPool([])).toThrow(/at least one/);
    expect(() => new EncoderPool([new HeldEmbedder('a'), new HeldEmbedder('b')])).toThrow(/same model/);
  });

  // The real model (models/use-lite, built by npm install) on two threads, as the server runs it.
  describe('the local encoder on two threads', () => {
    const stack = localEncoderStack({ modelPrecision: 'int8', encoderWorkers: 2 });
    beforeAll(() => stack.loadedAll());
    const here = new OnnxEmbedder({ precision: 'int8', intraOpThreads: 1 });
    afterAll(() => Promise.all([stack.close(), here.close()]));

    it('gives the vectors the model gives in this thread, for calls spread over both copies', async () => {
      const texts = Array.from({ length: 300 }, (_, i) => `Message ${i}: we talked about the trip to Kyoto and the ${i % 7} temples we saw.`);
      // Two callers at once, more tokens than one run holds: runs go out to both copies together.
      const [a, b] = await Promise.all([stack.embed(texts.slice(0, 150)), stack.embed(texts.slice(150), { priority: 'query' })]);
      const expected = await here.embed(texts);
      // Not the same bits: the int8 build quantizes activations with one scale per run, so a
      // text's vector moves a little with the run it shares (0.9989 at worst seen here), while
      // the texts, alike but for a number, lie 0.97-0.99 apart: each must still be nearest its own.
      const dot = (x: Float32Array, y: Float32Array) => x.reduce((sum, value, d) => sum + value * y[d]!, 0);
      [...a, ...b].forEach((vector, i) => {
        const similarities = expected.map((other) => dot(vector, other));
        expect(similarities[i]).toBeGreaterThan(0.998);
        expect(similarities.indexOf(Math.max(...similarities))).toBe(i);
      });
    });
  });
});
