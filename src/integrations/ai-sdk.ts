import { tool } from 'ai';
import { z } from 'zod';
import type { MemoryPoolApi } from 'memorypool-client';
import { addParamsSchema, MAX_LIMIT } from '../protocol/memorypool-schemas.js';

/**
 * memorypool as Vercel AI SDK tools (`memorypool/ai`, `ai` 6.x as an optional peer):
 * `generateText({ model, tools: memoryTools({ client, userId }) })`. The user is bound here, never
 * chosen by the model; the fields a model fills in are the server's own schemas (text, tags,
 * importance and metadata are picked from the `POST /mem` schema), so a call the model makes is validated as
 * the server would. Each `execute` is one client call and returns its answer.
 */

export interface MemoryToolsOptions {
  /** The HTTP client (`memorypool/client`) or the in-process pool (`memorypool`). */
  client: MemoryPoolApi;
  /** Whose memories the tools read and write (default "default"). */
  userId?: string;
}

const memoryFields = addParamsSchema.pick({ text: true, tags: true, importance: true, metadata: true });
const memoryId = z.string().min(1).meta({ description: "The memory's id, as recall returned it" });

export function memoryTools({ client, userId }: MemoryToolsOptions) {
  return {
    remember: tool({
      description: 'Store a fact worth remembering about the user or the conversation, as one self-contained statement.',
      inputSchema: memoryFields,
      execute: (input, { abortSignal }) => client.remember({ ...input, user_id: userId }, { signal: abortSignal }),
    }),
    recall: tool({
      description: 'Search the memories for what is relevant to a question; returns them best first, each with its id and score.',
      inputSchema: z.object({
        query: z.string().min(1).meta({ description: 'What to look for, in natural language' }),
        limit: z.number().int().min(1).max(MAX_LIMIT).optional().meta({ description: 'How many memories (default 10)' }),
        tag: z.string().min(1).optional().meta({ description: 'Only memories carrying this tag' }),
      }),
      execute: (input, { abortSignal }) => client.recall({ ...input, user_id: userId }, { signal: abortSignal }),
    }),
    update: tool({
      description: 'Correct a stored memory (found with recall): give its id and the fields that change.',
      inputSchema: memoryFields.partial().extend({ id: memoryId }),
      execute: ({ id, ...patch }, { abortSignal }) => client.update(id, { ...patch, user_id: userId }, { signal: abortSignal }),
    }),
    forget: tool({
      description: 'Delete a memory that is wrong or no longer wanted, by its id (found with recall).',
      inputSchema: z.object({ id: memoryId }),
      execute: ({ id }, { abortSignal }) => client.forget(id, { user_id: userId }, { signal: abortSignal }),
    }),
  };
}
