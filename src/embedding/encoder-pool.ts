import type { EmbedOptions, Embedder } from './embedder.js';

/**
 * Several copies of one encoder, each on a thread of its own (WorkerEmbedder), used as one: a
 * call goes to the copy with the fewest texts in flight. onnxruntime runs a session on the thread
 * that calls it, and one single-threaded session per core measured best (a session of two
 * intra-op threads spins while it waits: bench/README.md), so the pool is how encoding uses every
 * core. BatchingEmbedder in front of it hands over as many runs as there are copies, queries
 * first, so a query waits for the first copy to finish its run, never for a queue.
 *
 * `ready()` resolves once the first copy has loaded, and the others load one after another behind
 * it: a start answers as soon as one encoder can (loading every copy at once doubled the model's
 * share of a cold start on two cores), and a call goes only to copies that have loaded. They all
 * load at the start, not at the first burst of load, so a server's memory is what it is a moment
 * after the start (the cache budget is counted on top of it).
 */
export class EncoderPool implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly copies: readonly Embedder[];
  private readonly textsInFlight: number[];
  /** Copies that have loaded: only these are sent calls. */
  private readonly loaded: boolean[];
  private first: Promise<void> | null = null;
  private rest: Promise<void> | null = null;

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
    this.loaded = copies.map(() => false);
  }

  get size(): number {
    return this.copies.length;
  }

  ready(): Promise<void> {
    if (!this.first) {
      this.first = this.copies[0].ready().then(() => {
        this.loaded[0] = true;
        this.rest = this.loadTheOthers();
      });
      // A failed first load is reported to the caller of ready() (and to the next one: it retries).
      this.first.catch(() => (this.first = null));
    }
    return this.first;
  }

  /** Resolves when every copy has loaded (or failed to): the whole pool's memory is then in place. */
  async loadedAll(): Promise<void> {
    await this.ready();
    await this.rest;
  }

  private async loadTheOthers(): Promise<void> {
    for (let i = 1; i < this.copies.length; i++) {
      try {
        await this.copies[i].ready();
        this.loaded[i] = true;
      } catch {
        // A copy that cannot load is left out; the loaded ones serve (the first one's failure is reported).
      }
    }
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    if (!this.loaded[0]) await this.ready();
    let chosen = 0;
    for (let i = 1; i < this.copies.length; i++) if (this.loaded[i] && this.textsInFlight[i] < this.textsInFlight[chosen]) chosen = i;
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
