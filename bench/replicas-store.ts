import type { MemoryStore, UnitDraft } from '../src/store/memory-store.js';
import { round } from './http-load.js';
import { turnDraft, vectorPool } from './turn-drafts.js';
import { mulberry32, type Turn } from './workload.js';
import { serverEncoder } from './server-encoder.js';

/**
 * Many small users written straight through a store (one Add each), so the touched-users figure
 * does not wait on the encoder: real texts, random unit vectors of the real model's dimension and
 * id (a replica takes them as its own and re-embeds nothing).
 */

/** Distinct vectors drawn from: enough that no two memories of a user need share one. */
const VECTOR_POOL = 512;
const CONCURRENCY = 8;

export interface StoreUsersOptions {
  store: MemoryStore;
  users: number;
  memoriesPerUser: number;
  prefix: string;
  texts: readonly Turn[];
  seed: number;
}

export async function writeStoreUsers(options: StoreUsersOptions): Promise<{ users: string[]; seconds: number }> {
  const started = performance.now();
  const embedder = serverEncoder(); // for its id and dimension only: the model is not loaded
  const random = mulberry32(options.seed);
  const vectors = vectorPool(VECTOR_POOL, embedder.dimensions, random);
  const users = Array.from({ length: options.users }, (_, u) => `${options.prefix}-${u}`);
  const createdAt = new Date().toISOString();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < users.length) {
        const userId = users[next++];
        const requestId = `${userId}/add`;
        const drafts: UnitDraft[] = Array.from({ length: options.memoriesPerUser }, (_, m) => {
          const turn = options.texts[Math.floor(random() * options.texts.length)];
          const place = { userId, requestId, sessionId: 'session_1', occurredAt: new Date(turn.timeMs).toISOString(), createdAt, messageIndex: m, model: embedder.modelId };
          return turnDraft(turn, place, vectors[(next * options.memoriesPerUser + m) % VECTOR_POOL]);
        });
        await options.store.append(userId, drafts, { requestId });
      }
    }),
  );
  return { users, seconds: round((performance.now() - started) / 1000, 1) };
}
