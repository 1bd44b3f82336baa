/**
 * An incremental BM25 index over analyzed terms (see analyzer.ts), one field per document.
 *
 * score(d, q) = Σ over distinct terms t of q present in d:
 *   idf(t) · tf(t, d) · (k1 + 1) / (tf(t, d) + k1 · (1 − b + b · |d| / avgdl))
 * idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))   (Robertson / Lucene; never negative)
 * where N is the number of documents, |d| the number of terms of d and avgdl the mean of |d|.
 *
 * A term repeated in the query counts once: analyze() keeps repeats, and a question that happens
 * to say "pottery" twice should not double that word's weight against the rest of the question.
 */

export interface Bm25Params {
  /** Term-frequency saturation: 0 makes a term's score ignore how often it occurs. Default 1.2. */
  k1?: number;
  /** Length normalisation, 0 (none) to 1 (full): how much long documents are penalised. Default 0.75. */
  b?: number;
}

interface QueryWeights {
  termIds: number[];
  idfs: number[];
  k1: number;
  lengthWeight: number;
  constantNorm: number;
}

/** Below 1 by far more than the rounding of a sum of a few terms in another order: the pruning keeps a margin. */
const SAFE = 1 - 1e-9;

/**
 * A query term's idf, times its weight when the query gives one (an expansion term counts less than
 * the words the query said: query-expansion.ts); without one, the bits of the plain idf.
 */
function termIdf(documentCount: number, documentFrequency: number, weight: number | undefined): number {
  const idf = Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
  return weight === undefined ? idf : idf * weight;
}

/**
 * A term weighted below 1 (an expansion, not a word the query said) held by more than this share
 * of the documents is left out: weighted down and common, it adds next to nothing to any score,
 * yet walking its long posting list would cost as much as the rest of the query.
 */
export const EXPANSION_MAX_SHARE = 0.1;

function skipsTerm(documentCount: number, documentFrequency: number, weight: number | undefined): boolean {
  return weight !== undefined && weight < 1 && documentFrequency > EXPANSION_MAX_SHARE * documentCount;
}

export class Bm25Index {
  readonly k1: number;
  readonly b: number;

  /*
   * Plain arrays indexed by a dense document slot and a dense term id, interleaving pairs, rather
   * than an object or typed array per document: at 100k documents the per-object overhead would
   * outweigh the postings themselves.
   */
  private readonly slotByKey = new Map<number, number>();
  private readonly slotKeys: number[] = [];
  /** Number of terms (with repeats) of the document in each slot. */
  private readonly slotLengths: number[] = [];
  /**
   * Per slot, pairs [termId, position]: the document's distinct terms and where its posting sits
   * in each term's list, kept current as postings move, so removal never scans a posting list.
   */
  private readonly slotTerms: (number[] | undefined)[] = [];
  private readonly freeSlots: number[] = [];

  private readonly termIdByTerm = new Map<string, number>();
  private readonly terms: (string | undefined)[] = [];
  /** Per term id, pairs [slot, term frequency]. */
  private readonly postings: number[][] = [];
  private readonly freeTermIds: number[] = [];
  /** Score sums while topKeys() adds them up, by slot; all zero between calls. */
  private scoreScratch = new Float64Array(0);
  /** Term frequencies while add() counts a document, by term id; all zero between calls. */
  private frequencyScratch = new Uint32Array(1024);

  private totalLength = 0;

  constructor(params: Bm25Params = {}) {
    this.k1 = params.k1 ?? 1.2;
    this.b = params.b ?? 0.75;
  }

  /** Number of documents. */
  get size(): number {
    return this.slotByKey.size;
  }

  /** How many documents hold the term. */
  documentFrequency(term: string): number {
    const termId = this.termIdByTerm.get(term);
    return termId === undefined ? 0 : this.postings[termId]!.length / 2;
  }

  has(key: number): boolean {
    return this.slotByKey.has(key);
  }

  /** Indexes a document's terms (with repeats, as analyze() returns them); replaces an existing key. */
  add(key: number, terms: readonly string[]): void {
    if (this.slotByKey.has(key)) this.remove(key);

    const distinctTermIds: number[] = [];
    for (const term of terms) {
      const termId = this.termIdFor(term);
      if (this.frequencyScratch[termId]++ === 0) distinctTermIds.push(termId);
    }

    const slot = this.freeSlots.pop() ?? this.slotKeys.length;
    const slotTerms = new Array<number>(2 * distinctTermIds.length);
    for (let i = 0; i < distinctTermIds.length; i += 1) {
      const termId = distinctTermIds[i]!;
      const postingList = this.postings[termId]!;
      slotTerms[2 * i] = termId;
      slotTerms[2 * i + 1] = postingList.length / 2;
      postingList.push(slot, this.frequencyScratch[termId]!);
      this.frequencyScratch[termId] = 0;
    }

    this.slotKeys[slot] = key;
    this.slotLengths[slot] = terms.length;
    this.slotTerms[slot] = slotTerms;
    this.slotByKey.set(key, slot);
    this.totalLength += terms.length;
  }

  /**
   * Removes a document; a no-op for an unknown key. Each of its postings is overwritten by the
   * last posting of the same list, whose document is told its new position, so the cost depends
   * on the sizes of the documents involved, never on the size of the index.
   */
  remove(key: number): void {
    const slot = this.slotByKey.get(key);
    if (slot === undefined) return;
    const slotTerms = this.slotTerms[slot]!;

    for (let i = 0; i < slotTerms.length; i += 2) {
      const termId = slotTerms[i]!;
      const position = slotTerms[i + 1]!;
      const postingList = this.postings[termId]!;
      const lastPosition = postingList.length / 2 - 1;
      if (position !== lastPosition) {
        const movedSlot = postingList[2 * lastPosition]!;
        postingList[2 * position] = movedSlot;
        postingList[2 * position + 1] = postingList[2 * lastPosition + 1]!;
        const movedTerms = this.slotTerms[movedSlot]!;
        let j = 0;
        while (movedTerms[j] !== termId) j += 2;
        movedTerms[j + 1] = position;
      }
      postingList.length -= 2;
      if (postingList.length === 0) this.releaseTerm(termId);
    }

    this.totalLength -= this.slotLengths[slot]!;
    this.slotTerms[slot] = undefined;
    this.freeSlots.push(slot);
    this.slotByKey.delete(key);
  }

  /** BM25 score of every document holding at least one query term, by document key. */
  score(queryTerms: readonly string[]): Map<number, number> {
    const scores = new Map<number, number>();
    this.forEachScore(queryTerms, (key, termScore) => scores.set(key, (scores.get(key) ?? 0) + termScore));
    return scores;
  }

  /**
   * Calls `visit(key, termScore)` for every (distinct query term, matching document) pair, in
   * the order `score` sums them, so a caller can sum into its own typed array without a Map.
   */
  forEachScore(queryTerms: readonly string[], visit: (key: number, termScore: number) => void, termWeights?: readonly number[]): void {
    const documentCount = this.slotByKey.size;
    if (documentCount === 0) return;

    // An index of empty documents has avgdl 0; any positive value then gives the same scores.
    const averageLength = this.totalLength / documentCount || 1;
    const k1 = this.k1;
    const lengthWeight = (k1 * this.b) / averageLength;
    const constantNorm = k1 * (1 - this.b);

    const seen = new Set<number>();
    for (let q = 0; q < queryTerms.length; q++) {
      const termId = this.termIdByTerm.get(queryTerms[q]!);
      if (termId === undefined || seen.has(termId)) continue;
      seen.add(termId);
      const postingList = this.postings[termId]!;
      const documentFrequency = postingList.length / 2;
      if (skipsTerm(documentCount, documentFrequency, termWeights?.[q])) continue;
      const idf = termIdf(documentCount, documentFrequency, termWeights?.[q]);
      for (let i = 0; i < postingList.length; i += 2) {
        const slot = postingList[i]!;
        const frequency = postingList[i + 1]!;
        visit(this.slotKeys[slot]!, (idf * frequency * (k1 + 1)) / (frequency + constantNorm + lengthWeight * this.slotLengths[slot]!));
      }
    }
  }

  /**
   * The BM25 score of each of `keys` (0 for a key the index lacks or that holds no query term),
   * each a sum over the distinct query terms in the order `forEachScore` visits them, so the
   * same bits as summing its visits. The cost follows the keys' own terms, not the posting lists:
   * what a search of a few thousand candidates among a million documents needs.
   */
  scoreKeys(queryTerms: readonly string[], keys: ArrayLike<number>, termWeights?: readonly number[]): Float64Array {
    const scores = new Float64Array(keys.length);
    const query = this.queryWeights(queryTerms, termWeights);
    if (query.termIds.length === 0) return scores;
    for (let i = 0; i < keys.length; i++) {
      const slot = this.slotByKey.get(keys[i]);
      if (slot !== undefined) scores[i] = this.slotScore(slot, query);
    }
    return scores;
  }

  /**
   * The `k` best-scored keys among those holding a query term and passing `passes`, best first,
   * ties to the larger key (the newer memory): exactly the first `k` of `score()` sorted that way,
   * scores to the bit.
   *
   * Without a Map of every matching document or a sort of them all: the posting lists are walked
   * rarest term first, summing into a slot-indexed array, and once what the terms not walked yet
   * could add at most (idf · (k1 + 1) each) is below the k-th best sum so far, the rest (the
   * common words, speaker names and dates, whose lists hold a large share of a big user) are not
   * walked: a document in none of the walked lists cannot reach the top k (MaxScore's bound, term
   * at a time). The documents that still can are scored exactly, in query order (`slotScore`),
   * and the best k kept with a bounded heap.
   */
  topKeys(queryTerms: readonly string[], k: number, passes?: (key: number) => boolean, termWeights?: readonly number[]): Array<{ key: number; score: number }> {
    if (this.slotByKey.size === 0 || k <= 0) return [];
    const query = this.queryWeights(queryTerms, termWeights);
    const { termIds, idfs } = query;
    if (termIds.length === 0) return [];
    if (this.scoreScratch.length < this.slotKeys.length) this.scoreScratch = new Float64Array(Math.max(1024, this.slotKeys.length * 2));
    const sums = this.scoreScratch;
    const touched: number[] = [];
    const { k1, lengthWeight, constantNorm } = query;
    // A term adds less than idf · (k1 + 1) to any document (tf / (tf + norm) < 1).
    const order = termIds.map((_, t) => t).sort((a, b) => idfs[b] - idfs[a]);
    let unwalked = order.reduce((sum, t) => sum + idfs[t] * (k1 + 1), 0);
    let best = 0;
    let threshold = 0;
    let walked = 0;
    for (let w = 0; w < order.length; w++) {
      walked = w + 1;
      const t = order[w];
      const postingList = this.postings[termIds[t]]!;
      const idf = idfs[t];
      for (let i = 0; i < postingList.length; i += 2) {
        const slot = postingList[i]!;
        const frequency = postingList[i + 1]!;
        // Every term score is positive (idf > 0, frequency ≥ 1): a zero sum marks a document not met yet.
        if (sums[slot] === 0) touched.push(slot);
        const sum = (sums[slot] += (idf * frequency * (k1 + 1)) / (frequency + constantNorm + lengthWeight * this.slotLengths[slot]!));
        if (sum > best) best = sum;
      }
      unwalked -= idfs[t] * (k1 + 1);
      if (w + 1 === order.length || touched.length < k || unwalked >= best * SAFE) continue;
      threshold = this.kthBest(touched, sums, k, passes);
      if (unwalked < threshold * SAFE) break;
    }
    // Sums walked in another order than the query's differ from the exact scores in the last bits
    // at most: SAFE keeps every document whose exact score can reach the k-th best.
    if (walked === order.length) {
      unwalked = 0;
      threshold = touched.length > k ? this.kthBest(touched, sums, k, passes) : 0;
    }
    const heap = new TopK(k);
    for (const slot of touched) {
      const partial = sums[slot];
      sums[slot] = 0;
      if (partial + unwalked < threshold * SAFE) continue;
      const key = this.slotKeys[slot]!;
      if (passes && !passes(key)) continue;
      heap.offer(key, this.slotScore(slot, query));
    }
    return heap.sorted();
  }

  /** The k-th best sum among the touched documents passing `passes` (0 when fewer pass). */
  private kthBest(touched: readonly number[], sums: Float64Array, k: number, passes?: (key: number) => boolean): number {
    const heap = new TopK(k);
    for (const slot of touched) if (!passes || passes(this.slotKeys[slot]!)) heap.offer(slot, sums[slot]);
    return heap.size < k ? 0 : heap.worstScore;
  }

  /** A document's exact score: its terms' scores added in query order, as `forEachScore` visits them. */
  private slotScore(slot: number, query: QueryWeights): number {
    const { termIds, idfs, k1, lengthWeight, constantNorm } = query;
    const slotTerms = this.slotTerms[slot]!;
    const length = this.slotLengths[slot]!;
    let sum = 0;
    for (let t = 0; t < termIds.length; t++) {
      const termId = termIds[t];
      for (let j = 0; j < slotTerms.length; j += 2) {
        if (slotTerms[j] !== termId) continue;
        const frequency = this.postings[termId]![2 * slotTerms[j + 1]! + 1]!;
        sum += (idfs[t] * frequency * (k1 + 1)) / (frequency + constantNorm + lengthWeight * length);
        break;
      }
    }
    return sum;
  }

  /** The query's distinct known terms, in query order, with their idf, and the length normalisation as `forEachScore` computes it. */
  private queryWeights(queryTerms: readonly string[], termWeights?: readonly number[]): QueryWeights {
    const documentCount = this.slotByKey.size;
    const averageLength = this.totalLength / documentCount || 1;
    const k1 = this.k1;
    const termIds: number[] = [];
    const idfs: number[] = [];
    for (let q = 0; q < queryTerms.length; q++) {
      const termId = this.termIdByTerm.get(queryTerms[q]!);
      if (termId === undefined || termIds.includes(termId)) continue;
      const documentFrequency = this.postings[termId]!.length / 2;
      if (skipsTerm(documentCount, documentFrequency, termWeights?.[q])) continue;
      termIds.push(termId);
      idfs.push(termIdf(documentCount, documentFrequency, termWeights?.[q]));
    }
    return { termIds, idfs, k1, lengthWeight: (k1 * this.b) / averageLength, constantNorm: k1 * (1 - this.b) };
  }

  private termIdFor(term: string): number {
    const existing = this.termIdByTerm.get(term);
    if (existing !== undefined) return existing;
    const termId = this.freeTermIds.pop() ?? this.postings.length;
    this.termIdByTerm.set(term, termId);
    this.terms[termId] = term;
    this.postings[termId] = [];
    if (termId >= this.frequencyScratch.length) {
      const grown = new Uint32Array(this.frequencyScratch.length * 2);
      grown.set(this.frequencyScratch);
      this.frequencyScratch = grown;
    }
    return termId;
  }

  // Terms nobody uses any more are forgotten, so replacing documents forever does not grow the index.
  private releaseTerm(termId: number): void {
    this.termIdByTerm.delete(this.terms[termId]!);
    this.terms[termId] = undefined;
    this.postings[termId] = [];
    this.freeTermIds.push(termId);
  }
}

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
