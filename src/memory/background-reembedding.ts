import type { Logger } from '../logger.js';
import type { MemoryStore } from '../store/memory-store.js';
import type { StoredRecord } from '../store/stored-record.js';
import type { IndexLifecycle } from './index-lifecycle.js';
import { errorMessage } from './memory-records.js';
import type { UserState } from './user-state.js';

/**
 * Units re-embedded per store write. The JSONL store rewrites the user's file for each write, so
 * small chunks would cost a user of n units n/chunk rewrites of the whole file; a crash loses at
 * most one chunk's encoding (the store still holds those units' old vectors, so they are redone).
 */
const CHUNK_UNITS = 4096;

export interface BackgroundReembeddingOptions {
  store: MemoryStore;
  lifecycle: IndexLifecycle;
  modelId: string;
  /** Encodes the records' dense texts with the current model, as ingest work (queries go first). */
  reembed: (records: readonly StoredRecord[]) => Promise<Float32Array[]>;
  /** Called after a user's units got their vectors (the cache measures the user again). */
  changed: (state: UserState) => void;
  logger: Logger;
}

/**
 * Gives the units of loaded users a vector of the current model after the model changed, one user
 * at a time, while those users are served. Until every unit of a user has its new vector, that
 * user's searches leave the dense half out (UserCorpus.usableWeights): old vectors are never
 * compared with a query of the new model. Each chunk is written to the store (vector and model id)
 * before the cache takes it, under the user's lock, so a restart resumes with what is left.
 */
export class BackgroundReembedding {
  private readonly options: BackgroundReembeddingOptions;
  private readonly queue = new Set<UserState>();
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(options: BackgroundReembeddingOptions) {
    this.options = options;
  }

  /** Queues a user whose corpus has units waiting for a vector. */
  schedule(state: UserState): void {
    if (this.stopped || state.corpus.unembeddedCount === 0) return;
    this.queue.add(state);
    this.running ??= this.drain().finally(() => (this.running = null));
  }

  /** Resolves once no user waits (every one queued so far re-embedded, retired or failed). */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  /** Stops after the chunk under way; the rest is redone at the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.queue.clear();
    await this.settled();
  }

  private async drain(): Promise<void> {
    for (const state of this.queue) {
      this.queue.delete(state);
      const started = performance.now();
      const total = state.corpus.unembeddedCount;
      this.options.logger.info({ user_id: state.userId, records: total, model: this.options.modelId }, 'embedding model changed: re-embedding stored memories in the background');
      try {
        while (!this.stopped && !state.retired && (await this.chunk(state)));
        if (!state.retired && state.corpus.unembeddedCount === 0) {
          this.options.logger.info({ user_id: state.userId, records: total, ms: Math.round(performance.now() - started) }, 're-embedding done');
        }
      } catch (error) {
        // The user stays searchable by BM25 and the cues; its next load tries again.
        this.options.logger.error({ user_id: state.userId, err: errorMessage(error) }, 're-embedding failed; retried when the user is loaded again');
      }
    }
  }

  /** Re-embeds one chunk of the user's waiting units; false once none is left. */
  private async chunk(state: UserState): Promise<boolean> {
    const records = state.corpus.unembeddedSeqs
      .slice(0, CHUNK_UNITS)
      .map((seq) => state.bySeq.get(seq))
      .filter((record): record is StoredRecord => record !== undefined);
    if (records.length === 0) return false;
    const vectors = await this.options.reembed(records);
    await state.lock.run(async () => {
      if (state.retired) return;
      // A memory deleted while its text was encoded is left out; the rest is written first, so
      // the cache never holds a vector the store lacks.
      const kept = records.map((record, i) => ({ record, vector: vectors[i]! })).filter(({ record }) => state.bySeq.get(record.seq) === record);
      await this.options.store.replaceVectors(state.userId, kept.map(({ record, vector }) => ({ id: record.id, vector, model: this.options.modelId })));
      for (const { record } of kept) record.model = this.options.modelId;
      state.corpus.setVectors(kept.map(({ record, vector }) => ({ seq: record.seq, vector })));
      this.options.lifecycle.markDirty(state);
      this.options.lifecycle.indexLater(state);
      this.options.changed(state);
    });
    return true;
  }
}
