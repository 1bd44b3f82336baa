import { z } from 'zod';
import type { WhereNode } from './where.js';

/**
 * The domain's nouns: a memory, its versions, its metadata and the filter that scopes a search or
 * a list to some memories. Below every other module (the layer test, test/architecture/layers.test.ts,
 * keeps it there): the store keeps these, the service returns them, the protocol validates them and
 * the clients' types are inferred from schemas built on them.
 */

/** A metadata value: what `meta.<key>=` filters match, as the type it was stored with. */
export type MetadataValue = string | number | boolean;
export type Metadata = Record<string, MetadataValue>;

/** Metadata as stored and answered (the protocol's request schema adds its bounds on top). */
export const metadataSchema = z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]));

/**
 * What an update changes, and what each version of a memory keeps (its history, oldest first).
 * One schema serves as the type, the answer's shape (OpenAPI, the clients) and the rule an
 * imported file's `history` is read with.
 */
export const memoryVersionSchema = z.object({
  version: z.number().int().min(1),
  text: z.string(),
  tags: z.array(z.string()),
  importance: z.number(),
  metadata: metadataSchema,
  updated_at: z.string().meta({ format: 'date-time' }),
  // Scopes and expiry as that version had them (absent: none; versions written before they existed have none).
  agent_id: z.string().optional(),
  run_id: z.string().optional(),
  expires_at: z.string().meta({ format: 'date-time' }).optional(),
});
export type MemoryVersion = z.infer<typeof memoryVersionSchema>;

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
  /** Scopes beside the user (src/domain/scope.ts): the agent and the run it belongs to; absent when none. */
  agent_id?: string;
  run_id?: string;
  /** From this instant (ISO 8601) the memory is invisible on every door, then swept; absent: never. */
  expires_at?: string;
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
  /** Only memories of this agent / this run (exact; a scope nobody has matches nothing). */
  agentId?: string;
  runId?: string;
  /** A validated filter expression (src/domain/where.ts), ANDed with the rest. */
  where?: WhereNode;
  /** Only memories mentioning this entity, any case (the user's entity index: src/retrieval/entities/). */
  entity?: string;
}
