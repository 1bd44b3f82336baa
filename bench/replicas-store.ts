import { randomUUID } from 'node:crypto';
import type { MemoryStore, UnitDraft } from '../src/store/memory-store.js';
import { round } from './http-load.js';
import { gaussianSource, randomUnitVector } from './scale-store.js';
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
  const gaussian = gaussianSource(random);
  const vectors = Array.from({ length: VECTOR_POOL }, () => randomUnitVector(new Float32Array(embedder.dimensions), gaussian));
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
          return {
            record: {
              id: randomUUID(),
              user_id: userId,
              text: turn.content,
              tags: [],
              importance: 0.5,
              source: 'add',
              created_at: createdAt,
              session_id: 'session_1',
              role: turn.speaker,
              occurred_at: new Date(turn.timeMs).toISOString(),
              request_id: requestId,
              message_index: m,
              model: embedder.modelId,
            },
            vector: vectors[(next * options.memoriesPerUser + m) % VECTOR_POOL],
          };
        });
        await options.store.append(userId, drafts, { requestId });
      }
    }),
  );
  return { users, seconds: round((performance.now() - started) / 1000, 1) };
}
