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
  forEachScore(queryTerms: readonly string[], visit: (key: number, termScore: number) => void): void {
    const documentCount = this.slotByKey.size;
    if (documentCount === 0) return;

    // An index of empty documents has avgdl 0; any positive value then gives the same scores.
    const averageLength = this.totalLength / documentCount || 1;
    const k1 = this.k1;
    const lengthWeight = (k1 * this.b) / averageLength;
    const constantNorm = k1 * (1 - this.b);

    const seen = new Set<number>();
    for (const term of queryTerms) {
      const termId = this.termIdByTerm.get(term);
      if (termId === undefined || seen.has(termId)) continue;
      seen.add(termId);
      const postingList = this.postings[termId]!;
      const documentFrequency = postingList.length / 2;
      const idf = Math.log(1 + (documentCount - documentFrequency + 0.5) / (documentFrequency + 0.5));
      for (let i = 0; i < postingList.length; i += 2) {
        const slot = postingList[i]!;
        const frequency = postingList[i + 1]!;
        visit(this.slotKeys[slot]!, (idf * frequency * (k1 + 1)) / (frequency + constantNorm + lengthWeight * this.slotLengths[slot]!));
      }
    }
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
