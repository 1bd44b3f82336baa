import { describe, expect, it } from 'vitest';
import { BatchingEmbedder } from '../../src/embedding/batching-embedder.js';
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
    const embedder = new BatchingEmbedder(inner, { maxBatch: 100 });
    const reference = new HashEmbedder({ dimensions: 16 });
    const requests = Array.from({ length: 10 }, (_, i) => [`text ${i} a`, `text ${i} b`]);
    const results = await Promise.all(requests.map((texts) => embedder.embed(texts)));
    expect(inner.calls.length).toBeLessThanOrEqual(2);
    for (let i = 0; i < requests.length; i++) expect(results[i]).toEqual(await reference.embed(requests[i]));
  });

  it('respects the batch size and serves queries ahead of queued ingest work', async () => {
    const inner = new RecordingEmbedder();
    const embedder = new BatchingEmbedder(inner, { maxBatch: 4 });
    const ingest = Array.from({ length: 4 }, (_, i) => embedder.embed([`ingest ${i} a`, `ingest ${i} b`, `ingest ${i} c`]));
    const query = embedder.embed(['the query'], { priority: 'query' });
    await Promise.all([...ingest, query]);
    expect(inner.calls[0]).toEqual(['ingest 0 a', 'ingest 0 b', 'ingest 0 c']);
    expect(inner.calls[1][0]).toBe('the query');
    expect(Math.max(...inner.calls.map((call) => call.length))).toBeLessThanOrEqual(4);
  });

  it('fails only the callers of a failed call', async () => {
    const inner = new RecordingEmbedder();
    const embedder = new BatchingEmbedder(inner, { maxBatch: 2 });
    inner.failNext = true;
    const first = embedder.embed(['a', 'b']);
    const second = embedder.embed(['c']);
    await expect(first).rejects.toThrow('model failed');
    expect(await second).toHaveLength(1);
  });
});
