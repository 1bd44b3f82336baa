import { randomUUID } from 'node:crypto';
import { withStoredFeatures } from '../src/memory/unit-features.js';
import type { UnitDraft } from '../src/store/memory-store.js';
import { gaussianSource, randomUnitVector } from './scale-store.js';
import type { Turn } from './workload.js';

/**
 * What the stores written straight through `append` share (replicas-store.ts, many-users-store.ts):
 * random unit vectors of the real model's dimension, and a LoCoMo turn as one memory of an Add.
 */

/** `size` random unit vectors of `dimensions`, drawn from `random` (the caller's seeded source). */
export function vectorPool(size: number, dimensions: number, random: () => number): Float32Array[] {
  const gaussian = gaussianSource(random);
  return Array.from({ length: size }, () => randomUnitVector(new Float32Array(dimensions), gaussian));
}

export interface TurnPlace {
  userId: string;
  requestId: string;
  sessionId: string;
  occurredAt: string;
  createdAt: string;
  messageIndex: number;
  model: string;
}

/** A turn stored as the Add's `messageIndex`-th memory, with its vector. */
export function turnDraft(turn: Turn, place: TurnPlace, vector: Float32Array): UnitDraft {
  return {
    // With its features, as the service's own writes store them (src/memory/unit-features.ts).
    record: withStoredFeatures({
      id: randomUUID(),
      user_id: place.userId,
      text: turn.content,
      tags: [],
      importance: 0.5,
      source: 'add',
      created_at: place.createdAt,
      session_id: place.sessionId,
      role: turn.speaker,
      occurred_at: place.occurredAt,
      request_id: place.requestId,
      message_index: place.messageIndex,
      model: place.model,
    }),
    vector,
  };
}
