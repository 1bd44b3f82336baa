import type { EmbedOptions, Embedder } from './embedder.js';

/**
 * Several copies of one encoder, each on a thread of its own (WorkerEmbedder), used as one: a
 * call goes to the copy with the fewest texts in flight. onnxruntime runs a session on the thread
 * that calls it, and one single-threaded session per core measured best (a session of two
 * intra-op threads spins while it waits: bench/README.md), so the pool is how encoding uses every
 * core. BatchingEmbedder in front of it hands over as many runs as there are copies running
 * (`running`), queries first, so a query waits for the first copy to finish its run, never for a
 * queue.
 *
 * `ready()` resolves once the first copy has loaded. The others start one at a time, each when a
 * call says another copy would have served it sooner (`EmbedOptions.moreCopies`: BatchingEmbedder
 * asks on a backlog of stored texts, or for a query that waited behind them), and take calls once
 * loaded (~0.35 s for the int8 model): a burst of Adds has its second copy within half a second,
 * while a server that only searches, or whose writes come a few at a time and apart from its
 * Searches, never holds their model (~31 MiB of RSS each with the int8 model; 7 of them on an
 * 8-core machine) nor lets their threads take cores from the main thread. A copy, once started,
 * stays: the most memory the encoder takes is what it took when every copy loaded at the start.
 * `loadedAll()` starts and awaits every copy (a bench's bare encoder).
 */
export class EncoderPool implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly copies: readonly Embedder[];
  private readonly textsInFlight: number[];
  /** Copies that have loaded: only these are sent calls. */
  private readonly loaded: boolean[];
  /** Copies asked to load (the first `started` of `copies`). */
  private started = 0;
  private first: Promise<void> | null = null;
  /** The load of the copy started last beyond the first, while it loads. */
  private loading: Promise<void> | null = null;

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

  /** Copies the pool may start. */
  get size(): number {
    return this.copies.length;
  }

  /** Copies loaded and taking calls (at least 1 for BatchingEmbedder's runs, even before the first has loaded). */
  get running(): number {
    return Math.max(1, this.copiesRunning());
  }

  copiesRunning(): number {
    let count = 0;
    for (const loaded of this.loaded) if (loaded) count++;
    return count;
  }

  ready(): Promise<void> {
    if (!this.first) {
      this.started = Math.max(this.started, 1);
      this.first = this.copies[0].ready().then(() => {
        this.loaded[0] = true;
      });
      // A failed first load is reported to the caller of ready() (and to the next one: it retries).
      this.first.catch(() => (this.first = null));
    }
    return this.first;
  }

  /** Starts every copy not started yet and resolves when each has loaded (or failed to). */
  async loadedAll(): Promise<void> {
    await this.ready();
    while (this.started < this.copies.length || this.loading) {
      if (!this.loading) this.startNext();
      await this.loading;
    }
  }

  private startNext(): void {
    const index = this.started++;
    // Through a promise: a copy that refuses at once (closed) must not fail the call that asked.
    this.loading = Promise.resolve()
      .then(() => this.copies[index].ready())
      .then(
        () => {
          this.loaded[index] = true;
        },
        // A copy that cannot load is left out; the loaded ones serve (the first one's failure is reported).
        () => undefined,
      )
      .finally(() => (this.loading = null));
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    if (!this.loaded[0]) await this.ready();
    if (options.moreCopies === true && this.loading === null && this.started < this.copies.length) this.startNext();
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
