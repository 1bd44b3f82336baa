import { NOOP_SPAN, recordSpan, startSpan, tracingEnabled, type Span } from '../telemetry/tracing.js';
import type { BatchObserver, EmbedOptions, Embedder } from './embedder.js';

interface Job {
  vectors: Float32Array[];
  remaining: number;
  failed: boolean;
  resolve: (vectors: Float32Array[]) => void;
  reject: (error: unknown) => void;
  /** The caller's encode span: from the call until its last text is encoded. */
  span: Span;
}

interface Item {
  job: Job;
  index: number;
  text: string;
  /** Estimated tokens the encoder will read of `text` (what the item costs a run). */
  tokens: number;
  queuedAt: number;
}

export interface BatchingOptions {
  /** Most texts per run. Default 256. */
  maxTexts?: number;
  /** Most estimated tokens per run. Default 2048 (see DEFAULT_RUN_TOKENS). */
  maxTokens?: number;
  /** Tokens the encoder reads at most per text; longer texts cost this much. Default 128. */
  tokensPerTextMax?: number;
  /**
   * Runs handed to the inner embedder at once. Default 1: a query waits behind at most one run.
   * The next run is handed over before the last one's callers continue, so with one the encoder
   * waits only for the message round trip to this thread (~9% of an Add phase on a quiet machine).
   * A function is asked at each run: an encoder pool's copies running (encoder-pool.ts).
   */
  maxInFlight?: number | (() => number);
  /**
   * Ingest runs staged at once. Default 16: that many runs' worth of queued ingest texts is taken
   * fairly, sorted by length and cut into runs, so each run pads its texts to a similar length
   * (measured: 2.5 CPU ms per LoCoMo message in runs of mixed lengths, 1.8-2.0 in sorted ones).
   * Queries still go ahead of every staged run; 1 runs ingest texts in arrival order.
   */
  windowRuns?: number;
}

/**
 * A run cannot be interrupted once the encoder has it, so its size bounds how long a Search
 * waits behind ingest work: about 2k tokens is ~0.1-0.2 s of one core for the int8 model, and
 * larger runs are no faster per token.
 */
const DEFAULT_RUN_TOKENS = 2048;
/**
 * USE-lite's 8k pieces average 3.8 characters of English per token (LoCoMo's 4,805 turns: 36.0
 * tokens a turn; this estimate gives 36.7). The 3 used before over-counted by a third, so runs
 * held ~1,500 real tokens instead of ~2,000, and the encoder thread spent 1.92-1.95 CPU ms per
 * Add message against 1.71-1.77 with 4 (`node dist/bench/add-bench.js --requests 160`, int8).
 */
const CHARS_PER_TOKEN = 4;
const DEFAULT_WINDOW_RUNS = 16;
/**
 * An ingest run asks for another copy of the encoder (`EmbedOptions.moreCopies`) when at least
 * this many runs of stored texts wait behind it for each run it may have out: ingest is then
 * waiting on the encoder, and a run of stored texts takes as long on a second core. A single Add
 * (up to ~50 texts a run) never reaches it; 32 concurrent Adds of 20 messages (~12 runs) do at the
 * second run. A query run asks for one only when the query waited behind a run of stored texts
 * (what a second copy spares it). Query runs alone never do: a copy batches every query waiting
 * into its next run, and at 32 Search clients on a 2-core machine one copy answered more Searches
 * than two, whose split runs took the main thread's core (bench/README.md, "Encoder copies").
 */
export const WAITING_RUNS_PER_COPY = 2;

/**
 * Texts waiting for the encoder, one FIFO per fairness key, served round-robin: a key that
 * queued ten thousand texts gets one text into a run for every text of each other waiting key,
 * so one user's flood cannot make other users wait behind it. Map order is the rotation.
 */
class FairQueue {
  private readonly byKey = new Map<string, KeyQueue>();
  size = 0;
  /** Estimated tokens of the texts waiting. */
  tokens = 0;

  push(key: string, items: Item[]): void {
    const queue = this.byKey.get(key);
    // A loop, not push(...items): a spread of a hundred thousand texts overflows the call stack.
    if (queue) for (const item of items) queue.items.push(item);
    else this.byKey.set(key, { items, head: 0 });
    this.size += items.length;
    for (const item of items) this.tokens += item.tokens;
  }

  /** Up to `maxTexts` items and `maxTokens` tokens (at least one item), one key at a time in turn. */
  take(maxTexts: number, maxTokens: number): Item[] {
    const taken: Item[] = [];
    let tokens = 0;
    while (this.size > 0 && taken.length < maxTexts) {
      const [key, queue] = this.byKey.entries().next().value as [string, KeyQueue];
      const head = queue.items[queue.head]!;
      if (taken.length > 0 && tokens + head.tokens > maxTokens) break;
      queue.head++;
      this.size--;
      this.tokens -= head.tokens;
      taken.push(head);
      tokens += head.tokens;
      // Re-inserting moves the key to the back of the rotation.
      this.byKey.delete(key);
      if (queue.head < queue.items.length) {
        this.byKey.set(key, compacted(queue));
      }
    }
    return taken;
  }

  dropFailed(): void {
    for (const [key, queue] of this.byKey) {
      const kept = queue.items.slice(queue.head).filter((item) => !item.job.failed);
      this.size -= queue.items.length - queue.head - kept.length;
      for (let i = queue.head; i < queue.items.length; i++) if (queue.items[i]!.job.failed) this.tokens -= queue.items[i]!.tokens;
      if (kept.length === 0) this.byKey.delete(key);
      else this.byKey.set(key, { items: kept, head: 0 });
    }
  }
}

/**
 * One key's texts in arrival order from `head` on. Taking moves `head` instead of shifting the
 * array (a shift copies it: a flood of 200,000 texts cost 45 s of this thread in shifts alone).
 */
interface KeyQueue {
  items: Item[];
  head: number;
}

/** Drops the taken texts once they are most of the array, so a key that never runs dry does not grow it forever. */
function compacted(queue: KeyQueue): KeyQueue {
  if (queue.head < 1024 || queue.head * 2 < queue.items.length) return queue;
  return { items: queue.items.slice(queue.head), head: 0 };
}

/**
 * Runs one model call at a time over texts pooled from every concurrent caller. Sixty-four Adds
 * of twenty messages each would otherwise start sixty-four small runs that fight over two cores.
 * A run is capped by tokens, not texts (the encoder's cost follows tokens; the inner encoder
 * sorts a run by length so little goes to padding). Query texts (searches) run before any
 * queued ingest text, and within each class callers are served fairly by `EmbedOptions.key`.
 */
export class BatchingEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  private readonly inner: Embedder;
  private readonly maxTexts: number;
  private readonly maxTokens: number;
  private readonly tokensPerTextMax: number;
  private readonly urgent = new FairQueue();
  private readonly normal = new FairQueue();
  private readonly inFlightLimit: () => number;
  private readonly windowRuns: number;
  /** Ingest runs cut from the last window, shortest texts first; the next ingest run is the first. */
  private staged: Item[][] = [];
  private inFlight = 0;
  /** Ingest runs among those out. */
  private ingestInFlight = 0;
  /** A query was queued while every run out was taken and one of them held stored texts. */
  private queryBehindIngest = false;
  private observer: BatchObserver | null = null;

  constructor(inner: Embedder, options: BatchingOptions = {}) {
    this.inner = inner;
    this.modelId = inner.modelId;
    this.dimensions = inner.dimensions;
    this.maxTexts = options.maxTexts ?? 256;
    this.maxTokens = options.maxTokens ?? DEFAULT_RUN_TOKENS;
    this.tokensPerTextMax = options.tokensPerTextMax ?? 128;
    const maxInFlight = options.maxInFlight ?? 1;
    this.inFlightLimit = typeof maxInFlight === 'number' ? () => maxInFlight : maxInFlight;
    this.windowRuns = options.windowRuns ?? DEFAULT_WINDOW_RUNS;
  }

  ready(): Promise<void> {
    return this.inner.ready();
  }

  observeBatches(observer: BatchObserver): void {
    this.observer = observer;
  }

  loadedAll(): Promise<void> {
    return this.inner.loadedAll?.() ?? this.inner.ready();
  }

  copiesRunning(): number | undefined {
    return this.inner.copiesRunning?.();
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const span = tracingEnabled() ? startSpan('memorypool.encode', { 'memorypool.encoder.texts': texts.length, 'memorypool.encoder.priority': options.priority ?? 'ingest' }) : NOOP_SPAN;
      const job: Job = { vectors: new Array(texts.length), remaining: texts.length, failed: false, resolve, reject, span };
      const queue = options.priority === 'query' ? this.urgent : this.normal;
      if (queue === this.urgent && this.ingestInFlight > 0 && this.inFlight >= this.inFlightLimit()) this.queryBehindIngest = true;
      const queuedAt = performance.now();
      queue.push(
        options.key ?? '',
        texts.map((text, index) => ({ job, index, text, tokens: this.estimateTokens(text), queuedAt })),
      );
      this.drain();
    });
  }

  /** 2 for the start/end pieces plus the text's share, never more than the encoder reads. */
  private estimateTokens(text: string): number {
    return Math.min(this.tokensPerTextMax, 2 + Math.ceil(text.length / CHARS_PER_TOKEN));
  }

  /** Starts runs while fewer than maxInFlight are out; each finished run starts the next. */
  private drain(): void {
    const limit = this.inFlightLimit();
    while (this.inFlight < limit) {
      const priority = this.urgent.size > 0 ? 'query' : 'ingest';
      const batch = priority === 'query' ? this.urgent.take(this.queryRunTexts(limit), this.maxTokens) : this.nextIngestRun();
      if (batch.length === 0) return;
      this.inFlight++;
      if (priority === 'ingest') this.ingestInFlight++;
      void this.run(batch, priority);
    }
  }

  /**
   * With several runs out at once (an encoder pool), the waiting queries are shared among the
   * encoders: a run freed first would otherwise take every query waiting and keep its encoder busy
   * with all of them while the others finish and find nothing to do (measured at 32 Search
   * clients on two encoders). Each run takes its share of what waits, at least one query.
   */
  private queryRunTexts(limit: number): number {
    if (limit === 1) return this.maxTexts;
    return Math.min(this.maxTexts, Math.max(1, Math.ceil(this.urgent.size / limit)));
  }

  /**
   * The next staged ingest run, staging a new window when none is left: up to `windowRuns` runs'
   * worth of texts taken fairly, sorted by estimated tokens and cut into runs of similar lengths.
   * A window is served whole before the next is taken, so a text waits at most one window.
   */
  private nextIngestRun(): Item[] {
    if (this.staged.length === 0 && this.normal.size > 0) {
      const window = this.normal.take(this.maxTexts * this.windowRuns, this.maxTokens * this.windowRuns);
      if (this.windowRuns > 1) window.sort((a, b) => a.tokens - b.tokens);
      let run: Item[] = [];
      let tokens = 0;
      for (const item of window) {
        if (run.length > 0 && (run.length >= this.maxTexts || tokens + item.tokens > this.maxTokens)) {
          this.staged.push(run);
          run = [];
          tokens = 0;
        }
        run.push(item);
        tokens += item.tokens;
      }
      if (run.length > 0) this.staged.push(run);
    }
    return this.staged.shift() ?? [];
  }

  private runEnded(priority: 'query' | 'ingest'): void {
    this.inFlight--;
    if (priority === 'ingest') this.ingestInFlight--;
    this.drain();
  }

  /** Whether a run going out should ask for another copy of the encoder (WAITING_RUNS_PER_COPY says when). */
  private wantsMoreCopies(priority: 'query' | 'ingest'): boolean {
    if (priority === 'query') {
      const waited = this.queryBehindIngest;
      this.queryBehindIngest = false;
      return waited;
    }
    const waitingRuns = this.staged.length + Math.ceil(this.normal.tokens / this.maxTokens);
    return waitingRuns >= WAITING_RUNS_PER_COPY * this.inFlightLimit();
  }

  /**
   * The next run starts before this one's callers are answered: their continuations (building
   * records, the store write) would otherwise keep the encoder idle while this thread runs them.
   */
  private async run(batch: Item[], priority: 'query' | 'ingest'): Promise<void> {
    const started = performance.now();
    const traced = tracingEnabled() && batch.some((item) => item.job.span.recording);
    let thread: [number, number] | null = null;
    let vectors: Float32Array[];
    try {
      // A run is all queries or all stored texts, so a model's query prefix still applies.
      const moreCopies = this.wantsMoreCopies(priority);
      vectors = await this.inner.embed(
        batch.map((item) => item.text),
        traced ? { priority, moreCopies, onRun: (startMs, endMs) => (thread = [startMs, endMs]) } : { priority, moreCopies },
      );
    } catch (error) {
      for (const { job } of batch) {
        if (job.failed) continue;
        job.failed = true;
        job.span.fail(error);
        job.span.end();
        job.reject(error);
      }
      // The failed callers' other texts need not run.
      this.urgent.dropFailed();
      this.normal.dropFailed();
      this.staged = this.staged.map((run) => run.filter((item) => !item.job.failed)).filter((run) => run.length > 0);
      this.runEnded(priority);
      return;
    }
    this.runEnded(priority);
    const finished = performance.now();
    this.observer?.batch(batch.length, batch.map((item) => started - item.queuedAt), finished - started);
    if (traced) traceRun(batch, priority, started, finished, thread);
    batch.forEach((item, i) => {
      const { job } = item;
      if (job.failed) return;
      job.vectors[item.index] = vectors[i]!;
      if (--job.remaining === 0) {
        job.span.end();
        job.resolve(job.vectors);
      }
    });
  }
}

/**
 * One run, in the trace of each caller with texts in it (a run pools several callers): the
 * caller's wait in the queue, then the run from hand-over to vectors and beneath it the model's
 * run as the encoder thread timed it.
 */
function traceRun(batch: readonly Item[], priority: 'query' | 'ingest', started: number, finished: number, thread: [number, number] | null): void {
  const waits = new Map<Job, { texts: number; firstQueuedAt: number }>();
  for (const { job, queuedAt } of batch) {
    const wait = waits.get(job);
    if (wait) {
      wait.texts++;
      wait.firstQueuedAt = Math.min(wait.firstQueuedAt, queuedAt);
    } else waits.set(job, { texts: 1, firstQueuedAt: queuedAt });
  }
  const tokens = batch.reduce((sum, item) => sum + item.tokens, 0);
  for (const [job, { texts, firstQueuedAt }] of waits) {
    if (!job.span.recording) continue;
    recordSpan('memorypool.encoder.queue', { 'memorypool.encoder.texts': texts }, firstQueuedAt, started, job.span);
    const run = startSpan(
      'memorypool.encoder.run',
      {
        'memorypool.encoder.priority': priority,
        'memorypool.encoder.batch_texts': batch.length,
        'memorypool.encoder.batch_tokens': tokens,
        'memorypool.encoder.texts': texts,
        'memorypool.encoder.queue_wait_ms': started - firstQueuedAt,
        'memorypool.encoder.thread_ms': thread === null ? undefined : thread[1] - thread[0],
      },
      { startMs: started, parent: job.span },
    );
    if (thread !== null) recordSpan('memorypool.encoder.thread', undefined, thread[0], thread[1], run);
    run.end(finished);
  }
}
