/**
 * One user's Adds commit in the order they arrived, whichever of their embeddings finishes first.
 * Messages of one session that share a timestamp (LoCoMo and the platform send a session's date,
 * not each turn's) are ordered by their storage sequence, so a session split over several Adds
 * sent at once would otherwise be stored in the order the encoder happened to finish them: the
 * second half of a session before the first, its turns' neighbours and "first turns of the
 * session" wrong. Embedding still runs concurrently; only the short commit waits its turn.
 */
export interface Place {
  /** Resolves once every Add of the same key that arrived earlier has committed or failed. */
  readonly turn: Promise<void>;
  /** Lets the next Add of the key commit; call once, after committing or failing. */
  leave(): void;
}

export class ArrivalOrder {
  private readonly tails = new Map<string, Promise<void>>();

  /** Takes the next place in `key`'s line. Synchronous: the order of calls is the order of commits. */
  enter(key: string): Place {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let leave!: () => void;
    const mine = new Promise<void>((resolve) => (leave = resolve));
    this.tails.set(key, mine);
    // The line is forgotten once its last Add has left, so idle users hold nothing here.
    void mine.then(() => {
      if (this.tails.get(key) === mine) this.tails.delete(key);
    });
    return { turn: previous, leave };
  }

  /** Keys with an Add in line (for tests and stats). */
  get size(): number {
    return this.tails.size;
  }
}
