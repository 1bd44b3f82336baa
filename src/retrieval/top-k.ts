/**
 * The k best (key, score) pairs offered, kept in a min-heap of size k: best = higher score, then
 * larger key. Offering n pairs costs O(n log k), and most offers lose to the root at once.
 */
export class TopK {
  private readonly keys: number[] = [];
  private readonly scores: number[] = [];

  constructor(private readonly k: number) {}

  offer(key: number, score: number): void {
    const { keys, scores } = this;
    if (keys.length < this.k) {
      keys.push(key);
      scores.push(score);
      this.siftUp(keys.length - 1);
      return;
    }
    if (this.k === 0 || !better(key, score, keys[0], scores[0])) return;
    keys[0] = key;
    scores[0] = score;
    this.siftDown(0);
  }

  get size(): number {
    return this.keys.length;
  }

  /** The score of the worst pair kept (the k-th best once full). */
  get worstScore(): number {
    return this.scores[0];
  }

  /** Best first. */
  sorted(): Array<{ key: number; score: number }> {
    const out = this.keys.map((key, i) => ({ key, score: this.scores[i] }));
    return out.sort((a, b) => b.score - a.score || b.key - a.key);
  }

  private siftUp(at: number): void {
    const { keys, scores } = this;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (!better(keys[parent], scores[parent], keys[at], scores[at])) break;
      this.swap(at, parent);
      at = parent;
    }
  }

  private siftDown(at: number): void {
    const { keys, scores } = this;
    for (;;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let worst = at;
      if (left < keys.length && better(keys[worst], scores[worst], keys[left], scores[left])) worst = left;
      if (right < keys.length && better(keys[worst], scores[worst], keys[right], scores[right])) worst = right;
      if (worst === at) return;
      this.swap(at, worst);
      at = worst;
    }
  }

  private swap(a: number, b: number): void {
    const { keys, scores } = this;
    [keys[a], keys[b]] = [keys[b], keys[a]];
    [scores[a], scores[b]] = [scores[b], scores[a]];
  }
}

/** Whether (key, score) ranks above (otherKey, otherScore). */
function better(key: number, score: number, otherKey: number, otherScore: number): boolean {
  return score > otherScore || (score === otherScore && key > otherKey);
}
