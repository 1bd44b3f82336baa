import type { Memory, MemoryFilter, Metadata } from '../domain/memory.js';
import type { AppError } from '../errors.js';
import type { ScoreExplanation } from '../retrieval/fuse-scores.js';

export type { ScoreExplanation, ScoreTerm } from '../retrieval/fuse-scores.js';
/** The service's requests and answers, over the domain's nouns (src/domain/memory.ts). */
export interface ScoredMemory extends Memory {
  score: number;
  /** How many other memories of the same text (trimmed, white space collapsed, any case) were folded into this hit. */
  duplicates?: number;
}

/** Input of the MemoryPool protocol's add (validated at the edge). */
export interface NewMemory {
  userId: string;
  text: string;
  tags?: string[];
  importance?: number;
  source?: string;
  metadata?: Metadata;
  agentId?: string;
  runId?: string;
  /** When it expires (Unix ms), or in how many seconds from now. */
  expiresAtMs?: number;
  ttlSeconds?: number;
}

/** Input of an update (validated at the edge: at least one field). Each field given replaces the stored one. */
export interface MemoryUpdate {
  userId: string;
  id: string;
  text?: string;
  tags?: string[];
  importance?: number;
  metadata?: Metadata;
  /** A scope to move the memory to; null: to none. */
  agentId?: string | null;
  runId?: string | null;
  /** A new expiry (Unix ms; null: never), or in how many seconds from now. */
  expiresAtMs?: number | null;
  ttlSeconds?: number;
}

/** One message of an evaluation-platform Add (validated at the edge). */
export interface ConversationMessage {
  role: string;
  content: string;
  /** Unix milliseconds. */
  timestamp?: number;
}

export interface ConversationAdd {
  requestId: string;
  userId: string;
  sessionId: string;
  messages: ConversationMessage[];
}

export interface AddOutcome {
  /** False when the (request_id, user_id) key had already been written: nothing new was stored. */
  stored: boolean;
  units: number;
}

export interface SearchRequest {
  userId: string;
  query: string;
  limit: number;
  /** Multiple-choice answers, searched as extra queries and fused in. */
  options?: string[];
  filter?: MemoryFilter;
  /** Hold each distinct text once (the MemoryPool doors): the best copy, with `SearchHit.duplicates`. */
  collapseDuplicates?: boolean;
  /** Break each hit's score into its terms (`SearchHit.explanation`). */
  explain?: boolean;
  /** False: no reranker, even when one is configured (the answer is then the fused ranking's, exactly). */
  rerank?: boolean;
  /**
   * The door asking: `platform` (the evaluation platform's /search) applies
   * `PLATFORM_SEARCH_OVERRIDES` (no decay); absent, the MemoryPool protocol's weights.
   */
  profile?: 'platform';
}

/** A platform search hit: `content` stands on its own (who said it, and when). */
export interface SearchHit {
  memory: Memory;
  content: string;
  score: number;
  /**
   * Only when the request asked to explain: the unrounded score and its terms in the order the
   * fusion applied them (from 0: add, or multiply), so replaying them gives `explanation.score`.
   */
  explanation?: ScoreExplanation;
  /** With `collapseDuplicates`: the other memories of this text folded into this hit (absent when none). */
  duplicates?: number;
}

export interface ListRequest {
  userId: string;
  limit: number;
  filter?: MemoryFilter;
}

/** One operation of a batch (validated at the edge), for the batch's user. */
export type BatchOperation = ({ op: 'add' } & Omit<NewMemory, 'userId'>) | ({ op: 'update' } & Omit<MemoryUpdate, 'userId'>) | { op: 'delete'; id: string };

/** What an operation of a batch did: stored or updated a memory, deleted one, or refused with its own error. */
export type BatchOutcome = { memory: Memory; created: boolean } | { deleted: string } | { error: AppError };
