import type { ScoreExplanation } from '../retrieval/fuse-scores.js';

export type { ScoreExplanation, ScoreTerm } from '../retrieval/fuse-scores.js';

/** A metadata value: what `meta.<key>=` filters match, as the type it was stored with. */
export type MetadataValue = string | number | boolean;
export type Metadata = Record<string, MetadataValue>;

/** What an update changes, and what each version of a memory keeps (its history, oldest first). */
export interface MemoryVersion {
  version: number;
  text: string;
  tags: string[];
  importance: number;
  metadata: Metadata;
  updated_at: string;
}

/**
 * A memory as the store keeps it. `version`, `updated_at` and `metadata` are written only once
 * they differ from their defaults (1, `created_at`, `{}`), so the platform's Adds cost no more
 * bytes than before; `Memory` is what the doors see, every field filled in.
 */
export interface MemoryFields {
  id: string;
  user_id: string;
  text: string;
  tags: string[];
  importance: number;
  source: string;
  /** When the service stored it (ISO 8601). */
  created_at: string;
  version?: number;
  updated_at?: string;
  metadata?: Metadata;
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

/** A stored memory as every door returns it. Vectors and index data never leave the service. */
export interface Memory extends MemoryFields {
  /** 1 when created, +1 per update. */
  version: number;
  /** When the current version was written (its `created_at` until the first update). */
  updated_at: string;
  metadata: Metadata;
}

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
}

/** Input of an update (validated at the edge: at least one field). Each field given replaces the stored one. */
export interface MemoryUpdate {
  userId: string;
  id: string;
  text?: string;
  tags?: string[];
  importance?: number;
  metadata?: Metadata;
}

/**
 * Which memories a search or a list considers: every condition must hold. A search ranks among
 * the memories passing it only (they are the candidates), never cuts a ranked list afterwards.
 */
export interface MemoryFilter {
  /** Only memories carrying this tag. */
  tag?: string;
  /** Exact matches on metadata, each value read as the type the memory stored it with. */
  metadata?: Record<string, MetadataValue>;
  /** Bounds (Unix ms, both included) on the memory's time: `occurred_at`, else `created_at`. */
  sinceMs?: number;
  untilMs?: number;
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
