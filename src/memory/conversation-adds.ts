import { denseText } from '../ingest/message-units.js';
import { ArrivalOrder } from './arrival-order.js';
import { appendUnits } from './append-units.js';
import type { ServiceContext } from './service-context.js';
import type { AddOutcome, ConversationAdd } from './types.js';
import { conversationDraft, conversationUnits } from './write-drafts.js';

/**
 * The evaluation platform's Adds: a conversation's messages stored as units, in the order the
 * Adds arrived per user, at most once per (request_id, user_id).
 */
export class ConversationAdds {
  private readonly pending = new Map<string, Promise<AddOutcome>>();
  private readonly arrivals = new ArrivalOrder();

  constructor(
    private readonly service: ServiceContext,
    /** The service's count of work in flight (close waits for it). */
    private readonly track: <T>(work: () => Promise<T>) => Promise<T>,
  ) {}

  /**
   * Stores an evaluation-platform Add. Idempotent on (request_id, user_id): a repeat, even one
   * racing the first or arriving after a restart, stores nothing and reports `stored: false`;
   * the first body wins.
   */
  async add(input: ConversationAdd): Promise<AddOutcome> {
    const key = JSON.stringify([input.userId, input.requestId]);
    const pending = this.pending.get(key);
    if (pending) {
      await pending.catch(() => undefined);
      // The first attempt failed: this one is a retry in its own right.
      if (!this.pending.has(key)) return this.add(input);
      return { stored: false, units: 0 };
    }
    const attempt = this.track(() => this.store(input));
    this.pending.set(key, attempt);
    try {
      return await attempt;
    } finally {
      this.pending.delete(key);
    }
  }

  private async store(input: ConversationAdd): Promise<AddOutcome> {
    // Before any await: the place in line is the order this Add arrived in, and so is its time
    // (the date of messages without a timestamp), so a session's undated turns keep their order.
    const receivedAt = Date.now();
    const place = this.arrivals.enter(input.userId);
    try {
      return await this.storeInTurn(input, place.turn, receivedAt);
    } finally {
      place.leave();
    }
  }

  private async storeInTurn(input: ConversationAdd, turn: Promise<void>, receivedAt: number): Promise<AddOutcome> {
    // A repeat answered early, without loading the user: the state's ids when it is held, else the store's.
    if (this.service.cache.peek(input.userId)?.requestIds.has(input.requestId) || (await this.service.store.hasRequest(input.userId, input.requestId))) return { stored: false, units: 0 };
    const drafts = conversationUnits(input, receivedAt);
    const vectors = await this.service.embed(drafts.map((draft) => denseText(draft.unit)), 'ingest', input.userId);
    const units = drafts.map((draft, i) => conversationDraft(input, draft, receivedAt, vectors[i], this.service.embedder.modelId));
    await turn;
    const result = await appendUnits(this.service, input.userId, units, vectors, input.requestId);
    return result ? { stored: true, units: result.records.length } : { stored: false, units: 0 };
  }
}
