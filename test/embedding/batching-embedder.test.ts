import { describe, expect, it } from 'vitest';
import { BatchingEmbedder, WAITING_RUNS_PER_COPY } from '../../src/embedding/batching-embedder.js';
import type { Embedder } from '../../src/embedding/embedder.js';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';

/** Records each call the batching layer makes to the model. */
class RecordingEmbedder implements Embedder {
  readonly modelId = 'recording';
  readonly dimensions = 16;
  readonly calls: string[][] = [];
  private readonly inner = new HashEmbedder({ dimensions: 16 });
  failNext = false;

  async ready(): Promise<void> {}
  async close(): Promise<void> {}
  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    this.calls.push([...texts]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    if (this.failNext) {
      this.failNext = false;
      throw new Error('model failed');
    }
    return this.inner.embed(texts);
  }
}

describe('BatchingEmbedder', () => {
  it('merges concurrent callers into one model call and gives each its own vectors', async () => {
    const inner = new RecordingEmbedder();
    const embedder = new BatchingEmbedder(inner, { maxTexts: 100, maxInFlight: 1 });
    const reference = new HashEmbedder({ dimensions: 16 });
    const requests = Array.from({ length: 10 }, (_, i) => [`text ${i} a`, `text ${i} b`]);
    const results = await Promise.all(requests.map((texts) => embedder.embed(texts)));
    expect(inner.calls.length).toBeLessThanOrEqual(2);
    for (let i = 0; i < requests.length; i++) expect(results[i]).toEqual(await reference.embed(requests[i]));
  });

  it('respects the batch size and serves queries ahead of queued ingest work', async () => {
    const inner = new RecordingEmbedder();
    const embedder = new BatchingEmbedder(inner, { maxTexts: 4, maxInFlight: 1 });
    const ingest = Array.from({ length: 4 }, (_, i) => embedder.embed([`ingest ${i} a`, `ingest ${i} b`, `ingest ${i} c`]));
    const query = embedder.embed(['the query'], { priority: 'query' });
    await Promise.all([...ingest, query]);
    expect(inner.calls[0]).toEqual(['ingest 0 a', 'ingest 0 b', 'ingest 0 c']);
    expect(inner.calls[1][0]).toBe('the query');
    expect(Math.max(...inner.calls.map((call) => call.length))).toBeLessThanOrEqual(4);
  });

  it('caps a run by estimated tokens, not texts, and still runs a text longer than the cap', async () => {
    const inner = new RecordingEmbedder();
    // 2 + ceil(30 / 4) = 10 tokens per text below; 30 tokens fit three of them.
    const embedder = new BatchingEmbedder(inner, { maxTexts: 100, maxTokens: 30 });
    const texts = Array.from({ length: 7 }, (_, i) => `${'x'.repeat(27)} ${i}`.padEnd(30, '.'));
    const huge = 'y'.repeat(10_000);
    await Promise.all([embedder.embed(texts), embedder.embed([huge])]);
    expect(inner.calls.map((call) => call.length)).toEqual([3, 3, 1, 1]);
    // The huge text is counted at the encoder's 128-token limit, alone in its run.
    expect(inner.calls[3]).toEqual([huge]);
  });

  it("serves callers round-robin by key, so one key's flood does not hold up another's texts", async () => {
    const inner = new RecordingEmbedder();
    const embedder = new BatchingEmbedder(inner, { maxTexts: 4, maxInFlight: 1, windowRuns: 1 });
    const flood = embedder.embed(Array.from({ length: 40 }, (_, i) => `flood ${i}`), { key: 'user-a' });
    const other = embedder.embed(['other 0', 'other 1'], { key: 'user-b' });
    const queryA = embedder.embed(Array.from({ length: 6 }, (_, i) => `query a ${i}`), { key: 'user-a', priority: 'query' });
    const queryB = embedder.embed(['query b'], { key: 'user-b', priority: 'query' });
    await Promise.all([flood, other, queryA, queryB]);
    const order = inner.calls.flat();
    const at = (text: string) => order.indexOf(text);
    // The first run had started with the flood alone; then queries, user-b's in the first query run.
    expect(inner.calls[0]).toEqual(['flood 0', 'flood 1', 'flood 2', 'flood 3']);
    expect(inner.calls[1]).toContain('query b');
    expect(at('query b')).toBeLessThan(at('query a 5'));
    // Ingest resumes alternating the two keys: user-b's two texts go in the next ingest run.
    expect(inner.calls[3]).toEqual(['flood 4', 'other 0', 'flood 5', 'other 1']);
    expect(at('other 1')).toBeLessThan(at('flood 6'));
  });

  it('cuts a window of queued ingest texts into runs of similar lengths, queries still first', async () => {
    const inner = new RecordingEmbedder();
    // 2 + ceil(length / 3) tokens: 4 short texts (3 tokens) fit a 12-token run, 2 long ones (6) do too.
    const embedder = new BatchingEmbedder(inner, { maxTexts: 4, maxTokens: 12, windowRuns: 3 });
    const first = embedder.embed(['s0']);
    const mixed = ['l1 xxxxxxx', 's1', 'l2 xxxxxxx', 's2', 's3', 's4'];
    const ingest = embedder.embed(mixed, { key: 'a' });
    const late = embedder.embed(['s5'], { key: 'b' });
    await new Promise((resolve) => setTimeout(resolve, 1));
    const query = embedder.embed(['the query'], { priority: 'query' });
    const [, vectors] = await Promise.all([first, ingest, late, query]);
    // The first run had started alone and the query came next; then one window of every ingest
    // text queued, taken round-robin (user b's text included), shortest first.
    expect(inner.calls).toEqual([['s0'], ['the query'], ['s5', 's1', 's2', 's3'], ['s4', 'l1 xxxxxxx'], ['l2 xxxxxxx']]);
    expect(vectors).toEqual(await new HashEmbedder({ dimensions: 16 }).embed(mixed));
  });

  it('starts the next run before answering the callers of the last one', async () => {
    const inner = new RecordingEmbedder();
    const embedder = new BatchingEmbedder(inner, { maxTexts: 1, windowRuns: 1 });
    const runsWhenAnswered: number[] = [];
    const first = embedder.embed(['a']).then(() => runsWhenAnswered.push(inner.calls.length));
    await Promise.all([first, embedder.embed(['b'])]);
    // The encoder already had 'b' when the caller of 'a' got its vector.
    expect(runsWhenAnswered).toEqual([2]);
  });

  it('keeps up to maxInFlight runs at the inner embedder at once', async () => {
    let open = 0;
    let most = 0;
    const inner = new RecordingEmbedder();
    const slow: Embedder = {
      modelId: 'slow',
      dimensions: 16,
      ready: async () => undefined,
      close: async () => undefined,
      embed: async (texts) => {
        most = Math.max(most, ++open);
        const vectors = await inner.embed(texts);
        open--;
        return vectors;
      },
    };
    const embedder = new BatchingEmbedder(slow, { maxTexts: 2, maxInFlight: 2 });
    const results = await Promise.all(Array.from({ length: 5 }, (_, i) => embedder.embed([`text ${i} a`, `text ${i} b`])));
    expect(most).toBe(2);
    expect(results.flat()).toHaveLength(10);
  });


  it('shares the waiting queries among the runs it may have out, instead of giving them all to the first run freed', async () => {
    const inner = new RecordingEmbedder();
    const embedder = new BatchingEmbedder(inner, { maxInFlight: 2 });
    // Two single queries take both runs while ten more wait: the run freed first takes half of
    // them (5), the next half of the five still waiting (3), and so on.
    const queries = Array.from({ length: 12 }, (_, i) => embedder.embed([`query ${i}`], { priority: 'query' }));
    await Promise.all(queries);
    expect(inner.calls.map((call) => call.length)).toEqual([1, 1, 5, 3, 1, 1]);
    // With one run out at a time, every query waiting goes into the next run.
    const single = new RecordingEmbedder();
    const one = new BatchingEmbedder(single, { maxInFlight: 1 });
    await Promise.all(Array.from({ length: 12 }, (_, i) => one.embed([`query ${i}`], { priority: 'query' })));
    expect(single.calls.map((call) => call.length)).toEqual([1, 11]);
  });
  it('asks for another encoder copy on a backlog of stored texts, and for a query that waited behind them, never for queries alone', async () => {
    const seen: Array<[number, string | undefined, boolean | undefined]> = [];
    const inner = new RecordingEmbedder();
    const recording: Embedder = {
      modelId: 'recording',
      dimensions: 16,
      ready: async () => undefined,
      close: async () => undefined,
      embed: async (texts, options) => {
        seen.push([texts.length, options?.priority, options?.moreCopies]);
        return inner.embed(texts);
      },
    };
    // Runs of 4 texts at most (their tokens are far below the cap), one run out at a time.
    const embedder = new BatchingEmbedder(recording, { maxTexts: 4, maxInFlight: () => 1, windowRuns: 1 });
    const stored = (count: number) => Array.from({ length: count }, () => 'xxxx');
    // Queries alone, however many wait: no ask.
    await Promise.all([embedder.embed(['q1'], { priority: 'query' }), embedder.embed(['q2'], { priority: 'query' }), embedder.embed(['q3'], { priority: 'query' })]);
    expect(seen.map(([, , more]) => more)).toEqual([false, false]);
    seen.length = 0;
    // One run out, then 13 texts queued behind it: what waits is counted in runs of the token cap
    // (the texts' 39 tokens are one, below WAITING_RUNS_PER_COPY × 1), so no ask.
    await Promise.all([embedder.embed(['xxxx']), embedder.embed(stored(13))]);
    expect(seen.every(([, , more]) => more === false)).toBe(true);
    seen.length = 0;
    // With a token cap of 3 texts' worth, 10 texts queued behind a run are 4 runs waiting: an ask;
    // a query queued while that run is out waited behind stored texts: an ask too.
    const small = new BatchingEmbedder(recording, { maxTexts: 4, maxTokens: 9, maxInFlight: () => 1, windowRuns: 1 });
    const first = small.embed(['xxxx']);
    const rest = small.embed(stored(10));
    const query = small.embed(['q'], { priority: 'query' });
    await Promise.all([first, rest, query]);
    expect(seen.map(([texts, priority]) => [texts, priority])).toEqual([[1, 'ingest'], [1, 'query'], [3, 'ingest'], [3, 'ingest'], [3, 'ingest'], [1, 'ingest']]);
    // The first run went out alone (nothing behind it yet); the query had waited behind it; then
    // 7, 4 and 1 texts were left behind the runs (3, 2 and 1 runs of 3): asks while 2 or more wait.
    expect(seen.map(([, , more]) => more)).toEqual([false, true, true, true, false, false]);
    expect(WAITING_RUNS_PER_COPY).toBe(2);
  });

  it('queues any number of texts per key: a second flood joins the first, every caller gets its vectors', async () => {
    const instant: Embedder = {
      modelId: 'instant',
      dimensions: 1,
      ready: async () => undefined,
      close: async () => undefined,
      embed: async (texts) => texts.map((text) => Float32Array.of(Number(text.split(' ')[1]))),
    };
    const embedder = new BatchingEmbedder(instant, { maxTexts: 256 });
    const flood = (from: number) => Array.from({ length: 150_000 }, (_, i) => `t ${from + i}`);
    const [first, second, other] = await Promise.all([
      embedder.embed(flood(0), { key: 'a' }),
      embedder.embed(flood(150_000), { key: 'a' }),
      embedder.embed(['t -1'], { key: 'b' }),
    ]);
    expect(first.map((vector) => vector[0])).toEqual(flood(0).map((_, i) => i));
    expect(second[149_999][0]).toBe(299_999);
    expect(other[0][0]).toBe(-1);
  });

  it('fails only the callers of a failed call', async () => {
    const inner = new RecordingEmbedder();
    const embedder = new BatchingEmbedder(inner, { maxTexts: 2 });
    inner.failNext = true;
    const first = embedder.embed(['a', 'b']);
    const second = embedder.embed(['c']);
    await expect(first).rejects.toThrow('model failed');
    expect(await second).toHaveLength(1);
  });
});
