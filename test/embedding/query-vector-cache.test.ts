import { describe, expect, it } from 'vitest';
import type { EmbedOptions, Embedder } from '../../src/embedding/embedder.js';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { QueryVectorCache } from '../../src/embedding/query-vector-cache.js';

/** Records the texts that reach the model. */
class CountingEmbedder implements Embedder {
  readonly modelId = 'counting';
  readonly dimensions = 16;
  readonly seen: string[] = [];
  private readonly inner = new HashEmbedder({ dimensions: 16 });
  async ready(): Promise<void> {}
  async close(): Promise<void> {}
  async embed(texts: readonly string[], _options?: EmbedOptions): Promise<Float32Array[]> {
    this.seen.push(...texts);
    return this.inner.embed(texts);
  }
}

describe('QueryVectorCache', () => {
  it('encodes a repeated query once and returns equal vectors the caller may change', async () => {
    const inner = new CountingEmbedder();
    const cache = new QueryVectorCache(inner);
    const [first] = await cache.embed(['where did I park?'], { priority: 'query' });
    first![0] = 42;
    const [second, other] = await cache.embed(['where did I park?', 'something else'], { priority: 'query' });
    expect(inner.seen).toEqual(['where did I park?', 'something else']);
    expect(Array.from(second!)).toEqual(Array.from((await new HashEmbedder({ dimensions: 16 }).embed(['where did I park?']))[0]!));
    expect(other).toHaveLength(16);
    expect(cache.hits).toBe(1);
  });

  it('leaves ingest texts alone', async () => {
    const inner = new CountingEmbedder();
    const cache = new QueryVectorCache(inner);
    await cache.embed(['same text']);
    await cache.embed(['same text'], { priority: 'ingest' });
    expect(inner.seen).toEqual(['same text', 'same text']);
  });

  it('evicts the least recently used entry past its bound and skips huge texts', async () => {
    const inner = new CountingEmbedder();
    const cache = new QueryVectorCache(inner, { maxEntries: 2, maxTextChars: 100 });
    const q = (text: string) => cache.embed([text], { priority: 'query' });
    await q('a');
    await q('b');
    await q('a'); // a is now the most recent
    await q('c'); // evicts b
    await q('a');
    await q('b');
    expect(inner.seen).toEqual(['a', 'b', 'c', 'b']);
    const huge = 'h'.repeat(101);
    await q(huge);
    await q(huge);
    expect(inner.seen.filter((text) => text === huge)).toHaveLength(2);
  });
});
