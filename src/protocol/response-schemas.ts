import { z } from 'zod';
import { memoryVersionSchema, metadataSchema } from '../domain/memory.js';

/**
 * The shapes the doors answer with, for the OpenAPI document. The service does not parse its
 * own output with them; test/http/openapi.test.ts checks live answers against them, so they
 * cannot drift from what the routes really send.
 */

/** A memory version's shape is the domain's own (src/domain/memory.ts), answered as it is. */
export { memoryVersionSchema };

const isoTime = z.string().meta({ format: 'date-time' });

export const memorySchema = z
  .object({
    id: z.string(),
    user_id: z.string(),
    text: z.string(),
    tags: z.array(z.string()),
    importance: z.number().min(0).max(1),
    source: z.string(),
    created_at: isoTime.meta({ description: 'When the service stored it' }),
    version: z.number().int().min(1).meta({ description: '1 when created, +1 per update' }),
    updated_at: isoTime.meta({ description: 'When the current version was written (created_at until the first update)' }),
    metadata: metadataSchema,
    agent_id: z.string().optional().meta({ description: 'The agent it belongs to (absent: none)' }),
    run_id: z.string().optional().meta({ description: 'The run it belongs to (absent: none)' }),
    expires_at: isoTime.optional().meta({ description: 'When it expires (absent: never)' }),
    session_id: z.string().optional().meta({ description: 'Set on memories written through POST /add' }),
    role: z.string().optional(),
    occurred_at: isoTime.optional().meta({ description: "The message's own time" }),
    request_id: z.string().optional(),
    message_index: z.number().int().optional(),
    part: z.number().int().optional(),
    parts: z.number().int().optional(),
  })
  .strict();

/** A hit's score as retrieval fused it: added terms, then multipliers (asked for with `explain`). */
export const explanationSchema = z.object({
  score: z.number(),
  terms: z.array(z.object({ term: z.string(), kind: z.enum(['add', 'multiply']), value: z.number() })),
});

export const scoredMemorySchema = memorySchema
  .extend({
    score: z.number(),
    duplicates: z.number().int().min(1).optional().meta({ description: 'Other memories of the same text (trimmed, white space collapsed, any case) folded into this one' }),
    explanation: explanationSchema.optional(),
  })
  .strict();

/** POST /mem/list and /invoke page: a page of the list and what continues it. */
export const listPageSchema = z
  .object({
    memories: z.array(memorySchema).meta({ description: 'Newest first' }),
    next_cursor: z.string().nullable().meta({ description: 'Send it back as cursor (with the same filters) for the next page; null: this was the last' }),
  })
  .strict();

/** POST /mem/batch: each operation's answer, in the order sent, with the status its own route would have given. */
export const batchAnswerSchema = z
  .object({
    results: z.array(
      z
        .object({
          status: z.number().int().meta({ description: '201 added, 200 updated or deleted, 400 invalid, 404 not found' }),
          memory: memorySchema.optional().meta({ description: 'The memory added or updated' }),
          deleted: z.string().optional().meta({ description: 'The id deleted' }),
          error: z.string().optional().meta({ description: 'Why this operation was refused (the others still apply)' }),
        })
        .strict(),
    ),
  })
  .strict();

/** POST /mem/delete: how many went (or, with dry_run, would go). */
export const deletedCountSchema = z.object({ deleted: z.number().int().min(0), dry_run: z.boolean() }).strict();

export const historySchema = z.object({ id: z.string(), versions: z.array(memoryVersionSchema).meta({ description: 'Oldest first, the current version last' }) });
export const memoryWithHistorySchema = memorySchema.extend({ versions: z.array(memoryVersionSchema) }).strict();

export const poolStatsSchema = z
  .object({
    count: z.number().int(),
    users: z.number().int(),
    embedder: z.object({
      model: z.string(),
      dimensions: z.number().int(),
      reembedding: z.number().int().describe('memories held here still waiting for a vector of this model after a model change (their users are ranked without the dense half meanwhile)'),
    }),
    cache: z
      .object({ users: z.number().int(), estimated_bytes: z.number().int(), budget_bytes: z.number().int().nullable() })
      .meta({ description: 'The users this process holds in memory, their estimated size and the budget (null: none)' }),
    per_user: z.array(
      z.object({
        user_id: z.string(),
        count: z.number().int(),
        sessions: z.number().int(),
        bytes_on_disk: z.number().int(),
        cached: z.boolean().meta({ description: 'Whether the process that answered holds the user in memory' }),
        index: z.object({ graph: z.boolean(), loaded: z.boolean(), vectors: z.number().int(), complete: z.boolean(), pending_flush: z.boolean() }),
      }),
    ),
  });

/** GET /mem/entities: the user's entities, the most mentioned first. */
export const entitiesAnswerSchema = z.object({
  entities: z.array(
    z.object({
      entity: z.string().meta({ description: 'As first written; the `entity` filter takes it in any case' }),
      kind: z.enum(['person', 'title', 'name']).meta({ description: 'person: a speaker of the conversations; title: a quoted title; name: any other capitalised name' }),
      count: z.number().int().meta({ description: 'Memories mentioning it (a speaker: also those the speaker said)' }),
      last_seen: isoTime.nullable().meta({ description: 'The newest of their times (occurred_at, else created_at)' }),
    }),
  ),
});

/** `version`: the package's, so a client or a load balancer can tell which build answers. */
export const healthSchema = z.object({ ok: z.literal(true), service: z.literal('memorypool'), version: z.string(), count: z.number().int() });
export const deletedSchema = z.object({ deleted: z.string() });
export const deletedUserSchema = z.object({ deleted_user: z.string(), deleted: z.number().int() });

export const addAnswerSchema = z.object({ success: z.literal(true), request_id: z.string(), user_id: z.string(), session_id: z.string() });
export const searchAnswerSchema = z.object({
  data: z.array(
    z.object({
      id: z.string(),
      content: z.string().meta({ description: 'Stands on its own: `[YYYY-MM-DD HH:MM] speaker: text`' }),
      score: z.number(),
      created_at: isoTime.meta({ description: "The message's time" }),
    }),
  ),
});

export const errorBodySchema = z.object({
  detail: z.object({ reason: z.string() }),
  error: z.string().optional().meta({ description: 'On /mem and /invoke: the same message as detail.reason' }),
});
export const validationErrorBodySchema = z
  .object({ detail: z.array(z.object({ loc: z.array(z.union([z.string(), z.number()])), msg: z.string(), type: z.string() })) });
