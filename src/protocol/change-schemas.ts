import { z } from 'zod';
import { MAX_LIMIT } from './memorypool-schemas.js';
import { memorySchema } from './response-schemas.js';

/** The request and answer shapes of the change feed (GET /mem/changes, /invoke changes) and of GET /mem/webhooks. */

export const DEFAULT_CHANGES_LIMIT = 100;
/** A long poll holds the request at most this long (seconds). */
export const MAX_CHANGES_WAIT = 60;

/** A non-negative integer from JSON or a query string, within [min, max]. */
const count = (field: string, max: number) =>
  z
    .union([z.number(), z.string().regex(/^\s*\d+\s*$/).transform(Number)], { error: `${field} must be a non-negative integer` })
    .refine((value) => Number.isSafeInteger(value) && value >= 0, { error: `${field} must be a non-negative integer` })
    .refine((value) => value <= max, { error: `${field} must be at most ${max}` });

export const changesParamsSchema = z
  .object({
    after: count('after', Number.MAX_SAFE_INTEGER).optional().meta({ description: "The cursor: a page's next_cursor (0 or none: from the oldest event held)" }),
    limit: count('limit', MAX_LIMIT)
      .refine((value) => value > 0, { error: 'limit must be a positive integer' })
      .optional()
      .meta({ description: `Events at most (default ${DEFAULT_CHANGES_LIMIT}, at most ${MAX_LIMIT})` }),
    wait: count('wait', MAX_CHANGES_WAIT).optional().meta({ description: `Hold the request up to this many seconds (at most ${MAX_CHANGES_WAIT}) until an event arrives` }),
    user_id: z
      .string({ error: 'user_id must be a string' })
      .refine((value) => value.trim() !== '', { error: 'user_id must not be empty' })
      .optional()
      .meta({ description: "Only this user's events; omitted: every user the token covers" }),
  })
  .transform((value) => ({ after: value.after ?? 0, limit: value.limit ?? DEFAULT_CHANGES_LIMIT, wait: value.wait ?? 0, user_id: value.user_id }));

export const changeEventSchema = z
  .object({
    seq: z.number().int().min(1).meta({ description: 'Grows by one per event, in commit order, across every process and replica' }),
    type: z.enum(['added', 'updated', 'deleted', 'expired', 'user_deleted']),
    at: z.string().meta({ format: 'date-time' }),
    user_id: z.string(),
    memory_id: z.string().nullable().meta({ description: 'Null for user_deleted' }),
    memory: memorySchema.nullable().meta({ description: 'The memory as this write left it; null for deletions and for a memory deleted or expired since (the feed keeps no text)' }),
  })
  .strict();

export const changesPageSchema = z
  .object({
    events: z.array(changeEventSchema).meta({ description: 'In seq order' }),
    next_cursor: z.string().meta({ description: 'Send it back as after' }),
  })
  .strict();

export const cursorExpiredBodySchema = z.object({
  detail: z.object({ reason: z.string() }),
  error: z.string().optional().meta({ description: 'The same message as detail.reason' }),
  oldest_cursor: z.string().meta({ description: 'The oldest cursor still answerable' }),
});

export const webhookStatusSchema = z
  .object({
    id: z.string().meta({ description: "The hook's id: the one given in the file, else derived from its URL" }),
    url: z.string().meta({ description: 'Where events are POSTed (a user name and password in it are left out)' }),
    events: z.array(z.string()).nullable().meta({ description: 'The event types it wants; null: every type' }),
    users: z.array(z.string()).nullable().meta({ description: 'The users whose events it wants; null: every user' }),
    delivered_seq: z.number().int().nullable().meta({ description: 'Every event it wants up to this seq was delivered (answered 2xx); null before its first claim' }),
    failures: z.number().int().meta({ description: 'Failed attempts in a row at the next event' }),
    last_error: z.string().nullable(),
    next_try_at: z.string().nullable().meta({ format: 'date-time', description: 'When the failing event is tried again' }),
    failed: z.boolean().meta({ description: 'Given up after failing for 24 h: it waits, its events kept, until a server starts again' }),
    holder: z.string().nullable().meta({ description: 'The process delivering it (host:pid:nonce), null when none holds its lease' }),
    lease_expires_at: z.string().nullable().meta({ format: 'date-time' }),
  })
  .strict();

export const webhooksAnswerSchema = z.object({ webhooks: z.array(webhookStatusSchema).meta({ description: 'In the order of MEMORYPOOL_WEBHOOKS_FILE' }) }).strict();
