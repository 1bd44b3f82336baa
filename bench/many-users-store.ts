import type { MemoryStore, UnitDraft } from '../src/store/memory-store.js';
import { round } from './http-load.js';
import { serverEncoder } from './server-encoder.js';
import { turnDraft, vectorPool } from './turn-drafts.js';
import { mulberry32, type Turn } from './workload.js';

/**
 * The many-users stores (bench/many-users.ts): N users of 10-50 memories each (uniform), written
 * straight through a store's own `append` (the JSONL data directory or PostgreSQL, the same
 * calls for both), so that 100,000 users do not wait on the encoder. Each user's memories are
 * consecutive LoCoMo turns from a random point (real texts and speakers, a conversation's worth),
 * in Adds of up to 20 messages, sessions a few days apart; vectors are random unit vectors of the
 * real model's dimension and id, drawn from a pool (the server takes them as its own and
 * re-embeds nothing). The user ids and sizes follow from the seed alone: a run that reuses the
 * store can name its users without reading it.
 */

/** Distinct vectors drawn from: more than any user holds, so no two memories of a user share one. */
const VECTOR_POOL = 1024;
const CONCURRENCY = 8;
const ADD_MESSAGES = 20;
const DAY_MS = 86_400_000;
export const MIN_MEMORIES = 10;
export const MAX_MEMORIES = 50;

export interface ManyUsersPlan {
  users: number;
  seed: number;
}

/** The users of a plan and how many memories each holds: a function of the plan only. */
export function plannedUsers(plan: ManyUsersPlan): Array<{ userId: string; memories: number }> {
  const random = mulberry32(plan.seed);
  return Array.from({ length: plan.users }, (_, u) => ({ userId: `mu-${plan.seed}-${u}`, memories: MIN_MEMORIES + Math.floor(random() * (MAX_MEMORIES - MIN_MEMORIES + 1)) }));
}

/** Writes the users of `users` (from `plannedUsers`, or others) into the store; seconds taken. */
export async function writeManyUsers(store: MemoryStore, users: ReadonlyArray<{ userId: string; memories: number }>, texts: readonly Turn[], seed: number, progress?: (done: number) => void): Promise<number> {
  const started = performance.now();
  const embedder = serverEncoder(); // for its id and dimension only: the model is not loaded
  const random = mulberry32(seed ^ 0x5eed);
  const vectors = vectorPool(VECTOR_POOL, embedder.dimensions, random);
  const createdAt = new Date().toISOString();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < users.length) {
        const index = next++;
        const { userId, memories } = users[index];
        const start = Math.floor(random() * texts.length);
        const firstVector = Math.floor(random() * VECTOR_POOL);
        for (let from = 0; from < memories; from += ADD_MESSAGES) {
          const add = from / ADD_MESSAGES;
          const requestId = `${userId}/add-${add}`;
          const drafts: UnitDraft[] = [];
          for (let m = from; m < Math.min(memories, from + ADD_MESSAGES); m++) {
            const turn = texts[(start + m) % texts.length];
            const place = { userId, requestId, sessionId: `session_${add + 1}`, occurredAt: new Date(Date.UTC(2023, 0, 1) + add * 3 * DAY_MS).toISOString(), createdAt, messageIndex: m - from, model: embedder.modelId };
            drafts.push(turnDraft(turn, place, vectors[(firstVector + m) % VECTOR_POOL]));
          }
          await store.append(userId, drafts, { requestId });
        }
        if (index % 1000 === 999) progress?.(index + 1);
      }
    }),
  );
  return round((performance.now() - started) / 1000, 1);
}
