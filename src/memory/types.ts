import type { ScoreExplanation } from '../retrieval/fuse-scores.js';

export type { ScoreExplanation, ScoreTerm } from '../retrieval/fuse-scores.js';

/** A stored memory as every door returns it. Vectors and index data never leave the service. */
export interface Memory {
  id: string;
  user_id: string;
  text: string;
  tags: string[];
  importance: number;
  source: string;
  /** When the service stored it (ISO 8601). */
  created_at: string;
  /** Add-contract provenance; absent on memories written through /mem or the CLI. */
  session_id?: string;
  /** The message's role or speaker name as the client sent it. */
  role?: string;
  /** The message's own time (its timestamp, else the time of the Add), ISO 8601. */
  occurred_at?: string;
  request_id?: string;
  /** Position of the message in its Add, and of this unit in the message when it was split. */
  message_index?: number;
  part?: number;
  parts?: number;
}

export interface ScoredMemory extends Memory {
  score: number;
}

/** Input of the MemoryPool protocol's add (validated at the edge). */
export interface NewMemory {
  userId: string;
  text: string;
  tags?: string[];
  importance?: number;
  source?: string;
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
  /** Only memories carrying this tag. */
  tag?: string;
  /** Break each hit's score into its terms (`SearchHit.explanation`). */
  explain?: boolean;
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
}

export interface ListRequest {
  userId: string;
  limit: number;
  tag?: string;
}
