import type { EmbedOptions, Embedder } from './embedder.js';

/**
 * Several copies of one encoder, each on a thread of its own (WorkerEmbedder), used as one: a
 * call goes to the copy with the fewest texts in flight. onnxruntime runs a session on the thread
 * that calls it, and one single-threaded session per core measured best (a session of two
 * intra-op threads spins while it waits: bench/README.md), so the pool is how encoding uses every
 * core. BatchingEmbedder in front of it hands over as many runs as there are copies, queries
 * first, so a query waits for the first copy to finish its run, never for a queue.
 *
 * Every copy loads at `ready()`: a server's memory is then what it is at start, not a step up at
 * the first burst of load (the cache budget is counted on top of it).
 */
export class EncoderPool implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly copies: readonly Embedder[];
  private readonly textsInFlight: number[];

  constructor(copies: readonly Embedder[]) {
    if (copies.length === 0) throw new Error('An encoder pool needs at least one encoder');
    const [first] = copies;
    for (const copy of copies) {
      if (copy.modelId !== first.modelId || copy.dimensions !== first.dimensions) throw new Error('Every encoder of a pool must be the same model');
    }
    this.copies = copies;
    this.modelId = first.modelId;
    this.dimensions = first.dimensions;
    this.textsInFlight = copies.map(() => 0);
  }

  get size(): number {
    return this.copies.length;
  }

  async ready(): Promise<void> {
    await Promise.all(this.copies.map((copy) => copy.ready()));
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    let chosen = 0;
    for (let i = 1; i < this.copies.length; i++) if (this.textsInFlight[i] < this.textsInFlight[chosen]) chosen = i;
    this.textsInFlight[chosen] += texts.length;
    try {
      return await this.copies[chosen].embed(texts, options);
    } finally {
      this.textsInFlight[chosen] -= texts.length;
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.copies.map((copy) => copy.close()));
  }
}
