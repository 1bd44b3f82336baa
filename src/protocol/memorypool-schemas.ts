import { z } from 'zod';
import { MAX_MESSAGE_CHARS } from '../http/request-limits.js';

/**
 * The MemoryPool protocol's request shapes, shared by the HTTP routes, /invoke and the CLI's
 * BIT payloads, so every door accepts and rejects exactly the same input.
 */

export const DEFAULT_USER = 'default';
export const DEFAULT_SEARCH_LIMIT = 10;
export const DEFAULT_LIST_LIMIT = 20;
export const MAX_LIMIT = 1000;
/** A memory's text, in characters: the platform's per-message bound, for the same reason. */
export const MAX_TEXT_CHARS = MAX_MESSAGE_CHARS;

const nonBlank = (field: string) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? `${field} is required` : `${field} must be a string`) })
    .refine((value) => value.trim() !== '', { error: `${field} must not be empty` });

// The `.meta()` descriptions are what OpenAPI and the MCP tools show; they never change validation.
const userId = nonBlank('user_id').optional().meta({ description: 'Whose memories (default "default")' });

/** A positive integer, from JSON or from a query string ("10"); clamped to MAX_LIMIT. */
const limit = z
  .union([z.number(), z.string().regex(/^\s*\d+\s*$/).transform(Number)], { error: 'limit must be a positive integer' })
  .refine((value) => Number.isInteger(value) && value > 0, { error: 'limit must be a positive integer' })
  .transform((value) => Math.min(value, MAX_LIMIT))
  .optional()
  .meta({ description: `How many, a positive integer (capped at ${MAX_LIMIT})` });

const tag = nonBlank('tag').optional().meta({ description: 'Only memories carrying this tag' });

/** `explain=true` in a query string, `"explain": true` in JSON: each hit then carries its score's terms. */
const explain = z
  .union([z.boolean(), z.enum(['true', 'false', '1', '0'])], { error: 'explain must be true or false' })
  .transform((value) => value === true || value === 'true' || value === '1')
  .optional()
  .meta({ description: "Break each hit's score into the terms that made it (dense, BM25, boosts, multipliers)" });

export const addParamsSchema = z.object({
  text: nonBlank('text')
    .max(MAX_TEXT_CHARS, { error: `text must be at most ${MAX_TEXT_CHARS} characters` })
    .meta({ description: 'What to remember, one self-contained statement' }),
  tags: z
    .array(z.string({ error: 'tags must be an array of strings' }), { error: 'tags must be an array of strings' })
    .max(256)
    .optional()
    .meta({ description: 'Labels to filter by later' }),
  importance: z
    .number({ error: 'importance must be a number between 0 and 1' })
    .min(0, { error: 'importance must be between 0 and 1' })
    .max(1, { error: 'importance must be between 0 and 1' })
    .optional()
    .meta({ description: 'From 0 to 1 (default 0.5); weighs the memory in search' }),
  source: nonBlank('source').optional().meta({ description: 'Where it came from' }),
  user_id: userId,
});

export const searchParamsSchema = z
  .object({
    // Checked below rather than typed here, so both spellings get the same messages.
    query: z.unknown().optional().meta({ type: 'string', description: 'What to look for, in natural language' }),
    q: z.unknown().optional().meta({ type: 'string', description: 'Same as query' }),
    tag,
    limit,
    explain,
    user_id: userId,
  })
  .transform((value, ctx) => {
    const query = value.query ?? value.q;
    if (typeof query !== 'string' || query.trim() === '') {
      ctx.addIssue({ code: 'custom', path: ['query'], message: query === undefined ? 'is required' : 'must be a non-empty string' });
      return z.NEVER;
    }
    return { query, tag: value.tag, limit: value.limit ?? DEFAULT_SEARCH_LIMIT, explain: value.explain ?? false, user_id: value.user_id ?? DEFAULT_USER };
  });

export const listParamsSchema = z
  .object({ tag, limit, user_id: userId })
  .transform((value) => ({ tag: value.tag, limit: value.limit ?? DEFAULT_LIST_LIMIT, user_id: value.user_id ?? DEFAULT_USER }));

export const idParamsSchema = z.object({ id: nonBlank('id').meta({ description: "The memory's id" }), user_id: userId });

export const userScopeSchema = z.object({ user_id: userId });

export type AddParams = z.infer<typeof addParamsSchema>;
