import type { MemoryFields } from '../domain/memory.js';
import type { Embedder } from '../embedding/embedder.js';
import type { RetrievalWeights } from '../retrieval/retrieval-config.js';
import type { MemoryStore } from '../store/memory-store.js';
import type { RerankSettings } from './rerank-hits.js';
import type { UserCache } from './user-cache.js';
import type { UserState } from './user-state.js';

/**
 * Appends do not wait for the HNSW index: it is attached and filled after the acknowledgement
 * (`UserCache.applyAppend`), and the units are searchable at once by exhaustive scoring.
 */
export const APPEND = { attachIndex: false } as const;

/**
 * The MemoryService's state and the rules every write follows (under the user's lock, embedded
 * outside it), as its parts (portability.ts, pool-stats.ts) use them: they order writes exactly
 * as the service's own methods do.
 */
export interface ServiceContext {
  readonly store: MemoryStore;
  readonly cache: UserCache;
  readonly embedder: Embedder;
  readonly weights: RetrievalWeights;
  /** The reranker a Search's best hits go through, when one was brought (rerank-hits.ts). */
  readonly rerank?: RerankSettings;
  /** The user as stored now, or null for one that has nothing stored. */
  existingUser(userId: string): Promise<UserState | null>;
  /** Runs a write under the user's lock, starting over if the cached user was retired meanwhile. */
  underLock<T>(userId: string, task: (state: UserState) => Promise<T>, options?: { attachIndex?: boolean }): Promise<T>;
  embed(texts: string[], priority?: 'query' | 'ingest', key?: string): Promise<Float32Array[]>;
  /** Adds `delta` memories to the service's count of what is stored. */
  counted(delta: number): void;
  /** The service's clock (Unix ms): what expiry is judged by (a test sets its own). */
  now(): number;
  /** Whether a stored memory shows on the doors at `nowMs` (it has not expired). */
  visible(record: MemoryFields, nowMs: number): boolean;
}
