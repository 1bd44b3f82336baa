import type { ConversationMessage } from '../src/memory/types.js';
import { countWords, type BenchUser } from './benchmark.js';

/** The evaluation platform's Add limits: a longer session is cut at message boundaries. */
export const ADD_LIMITS = { maxMessages: 20, maxWords: 2000 } as const;

/** One Add request of the replay, with the benchmark turn behind each message. */
export interface PlannedAdd {
  requestId: string;
  userId: string;
  sessionId: string;
  messages: ConversationMessage[];
  /** `turnIds[i]` is the turn sent as message i (the service's `message_index`). */
  turnIds: string[];
}

export interface AddLimits {
  maxMessages: number;
  maxWords: number;
}

/**
 * Splits each session into Adds of at most `maxMessages` messages and `maxWords` words, cutting
 * only between messages; a single message longer than `maxWords` travels alone.
 * Request ids are deterministic so that replaying against a persistent server is idempotent.
 * `timestamps: false` sends none, as a client may (they are optional in the contract); the request
 * ids stay the same, so such a replay needs a data directory of its own.
 */
export function planAdds(user: BenchUser, limits: AddLimits = ADD_LIMITS, timestamps = true): PlannedAdd[] {
  const adds: PlannedAdd[] = [];
  for (const session of user.sessions) {
    let current: PlannedAdd | undefined;
    let words = 0;
    let part = 0;
    for (const turn of session.turns) {
      const turnWords = countWords(turn.content);
      if (turn.content.trim() === '') continue;
      const full = current !== undefined && (current.messages.length >= limits.maxMessages || words + turnWords > limits.maxWords);
      if (current === undefined || full) {
        current = {
          requestId: `${user.userId}/${session.sessionId}/${part++}`,
          userId: user.userId,
          sessionId: session.sessionId,
          messages: [],
          turnIds: [],
        };
        adds.push(current);
        words = 0;
      }
      const message: ConversationMessage = { role: turn.role, content: turn.content };
      if (timestamps && turn.timestamp !== undefined) message.timestamp = turn.timestamp;
      current.messages.push(message);
      current.turnIds.push(turn.turnId);
      words += turnWords;
    }
  }
  return adds;
}

/** Maps a stored unit's provenance (user, request, message index) back to its benchmark turn. */
export class TurnLocator {
  private readonly turns = new Map<string, string>();

  constructor(adds: readonly PlannedAdd[]) {
    for (const add of adds) {
      add.turnIds.forEach((turnId, index) => this.turns.set(key(add.userId, add.requestId, index), turnId));
    }
  }

  locate(userId: string, requestId: string | undefined, messageIndex: number | undefined): string | undefined {
    if (requestId === undefined || messageIndex === undefined) return undefined;
    return this.turns.get(key(userId, requestId, messageIndex));
  }
}

function key(userId: string, requestId: string, messageIndex: number): string {
  return `${userId}\u0000${requestId}\u0000${messageIndex}`;
}
