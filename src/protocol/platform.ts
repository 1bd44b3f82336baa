import { z } from 'zod';
import type { ValidationIssue } from '../errors.js';
import { writtenAsNonInteger } from './number-literals.js';
import { MAX_ADD_CHARS, MAX_ADD_MESSAGES, MAX_MESSAGE_CHARS, MAX_SEARCH_OPTIONS } from './request-limits.js';
import { nonBlankString, parseOr422 } from './validation.js';
import type { MemoryApi } from '../memory/memory-api.js';
import type { UserCheck } from './operations.js';

/**
 * The evaluation platform's Add and Search: their request schemas (which the OpenAPI document and
 * the typed clients read too) and what each does once validated, shared by the HTTP routes and
 * the in-process pool (src/in-process.ts), so both accept, refuse and answer alike.
 */

/** Dates outside ±8.64e15 ms are not representable; they are not a real message time. */
const MAX_TIMESTAMP_MS = 8_640_000_000_000_000;

const messageSchema = z.object(
  {
    role: nonBlankString(),
    content: nonBlankString().max(MAX_MESSAGE_CHARS, { error: `String should have at most ${MAX_MESSAGE_CHARS} characters` }),
    timestamp: z
      .number({ error: 'Input should be a valid integer' })
      .refine(Number.isInteger, { error: 'Input should be a valid integer, got a number with a fractional part', params: { type: 'int_from_float' } })
      .refine((value) => Math.abs(value) <= MAX_TIMESTAMP_MS, { error: 'Timestamp is out of range', params: { type: 'value_error' } })
      .nullish(),
  },
  { error: 'Input should be a valid dictionary' },
);

/** The platform's Add: strict on declared fields, silent on undeclared ones (zod strips them). */
export const addRequestSchema = z.object(
  {
    request_id: nonBlankString(),
    user_id: nonBlankString(),
    session_id: nonBlankString(),
    messages: z
      .array(messageSchema, { error: (issue) => (issue.input === undefined ? 'Field required' : 'Input should be a valid list') })
      .min(1, { error: 'List should have at least 1 item' })
      .max(MAX_ADD_MESSAGES, { error: (issue) => `List should have at most ${MAX_ADD_MESSAGES} items after validation, not ${(issue.input as unknown[]).length}` })
      .refine((messages) => messages.reduce((sum, message) => sum + message.content.length, 0) <= MAX_ADD_CHARS, {
        error: `The messages' content should total at most ${MAX_ADD_CHARS} characters`,
        params: { type: 'too_long' },
      }),
  },
  { error: 'Input should be a valid dictionary' },
);

export const searchRequestSchema = z.object(
  {
    query: nonBlankString(),
    user_id: nonBlankString(),
    top_k: z
      .number({ error: (issue) => (issue.input === undefined ? 'Field required' : 'Input should be a valid integer') })
      // Any integer, however large (the route clamps it to top_k_max); `.int()` would refuse those past 2^53.
      .refine(Number.isInteger, { error: 'Input should be a valid integer', params: { type: 'int_type' } })
      .min(1, { error: 'Input should be greater than or equal to 1' })
      // The refinement above is invisible to JSON Schema: the OpenAPI document still says integer.
      .meta({ type: 'integer' }),
    options: z
      .array(z.string({ error: 'Input should be a valid string' }), { error: 'Input should be a valid list' })
      .max(MAX_SEARCH_OPTIONS, { error: (issue) => `List should have at most ${MAX_SEARCH_OPTIONS} items after validation, not ${(issue.input as unknown[]).length}` })
      .nullish(),
  },
  { error: 'Input should be a valid dictionary' },
);

export type AddRequest = z.infer<typeof addRequestSchema>;
export type SearchRequestBody = z.infer<typeof searchRequestSchema>;

/** Validates an Add (422 listing every problem), checks the user, stores it durably. */
export async function platformAdd(service: MemoryApi, input: unknown, checkUser: UserCheck) {
  const body = parseOr422(addRequestSchema, input);
  checkUser(body.user_id);
  await service.addConversation({
    requestId: body.request_id,
    userId: body.user_id,
    sessionId: body.session_id,
    messages: body.messages.map((message) => ({ role: message.role, content: message.content, timestamp: message.timestamp ?? undefined })),
  });
  return { success: true as const, request_id: body.request_id, user_id: body.user_id, session_id: body.session_id };
}

/**
 * A service that makes the platform's Search answer whole where it runs (the service threads,
 * src/threads/): the answer's four fields a hit cross between threads, not every hit's memory.
 */
export interface PlatformSearchDoor {
  platformSearchAnswer(input: unknown, topKMax: number, checkUser: UserCheck): Promise<PlatformSearchAnswer>;
}

export interface PlatformSearchAnswer {
  data: Array<{ id: string; content: string; score: number; created_at: string }>;
}

/** Validates a Search (`top_k` as written, when the caller has the raw body), checks the user, ranks; or has the service answer it whole (PlatformSearchDoor). */
export async function platformSearch(service: MemoryApi, input: unknown, topKMax: number, checkUser: UserCheck): Promise<PlatformSearchAnswer> {
  if ('platformSearchAnswer' in service) return (service as MemoryApi & PlatformSearchDoor).platformSearchAnswer(input, topKMax, checkUser);
  const body = parseOr422(searchRequestSchema, input, topKLiteralIssues(input));
  checkUser(body.user_id);
  const hits = await service.search({
    userId: body.user_id,
    query: body.query,
    limit: Math.min(body.top_k, topKMax),
    options: body.options ?? undefined,
    // The platform's door searches without decay (eval/README.md: decay measured as no gain on benchmark conversations and a loss on unseen ones).
    profile: 'platform',
    // Each distinct text once, as the MemoryPool doors answer: measured as no loss on either dev
    // set (R@1-100 and the word budgets equal, issue 16), and a repeated short turn no longer
    // takes the places of others. The answer's fields stay the platform's own.
    collapseDuplicates: true,
  });
  return {
    data: hits.map((hit) => ({
      id: hit.memory.id,
      content: hit.content,
      score: hit.score,
      created_at: hit.memory.occurred_at ?? hit.memory.created_at,
    })),
  };
}

/** `top_k` must be written as an integer literal: `100.0` is a float in the platform's eyes. */
function topKLiteralIssues(body: unknown): ValidationIssue[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return [];
  const topK = (body as Record<string, unknown>).top_k;
  if (typeof topK === 'number' && Number.isInteger(topK) && writtenAsNonInteger(body, 'top_k')) {
    return [{ loc: ['body', 'top_k'], msg: 'Input should be a valid integer, written without a fraction or exponent', type: 'int_type' }];
  }
  return [];
}
