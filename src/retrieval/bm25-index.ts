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

import { grownInts, PairPool, type PoolRegions } from './pair-pool.js';
import { TopK } from './top-k.js';

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

/*
 * A term's row in the term table: its posting list's first int in the postings' pool, its
 * postings (pairs [slot, term frequency]), and the pairs its region has room for.
 */
const TERM_STRIDE = 3;
const TERM_START = 0;
const TERM_COUNT = 1;
const TERM_ROOM = 2;
/*
 * A slot's row in the slot table: its terms' first int in the slots' pool (-1 for a free slot),
 * its distinct terms (pairs [term id, position in the term's list]), and its number of terms
 * with repeats (its length for BM25).
 */
const SLOT_STRIDE = 3;
const SLOT_START = 0;
const SLOT_TERMS = 1;
const SLOT_LENGTH = 2;

/** Fewer documents than this are added one by one: the bulk path's bookkeeping would cost more than the moves it saves. */
const BULK_DOCUMENTS = 4;
/** A list at least this long, laid out by a bulk add, gets an eighth more room: the next Adds to a common term need not move it. */
const SLACK_FROM = 64;

/*
 * Scratch arrays of every index of the thread (an index never yields while it uses them), all
 * zero between calls: term frequencies while a document is counted, by term id; score sums
 * while topKeys adds them up, by slot. One for all, not one an index: 4 KB and more a user.
 */
let frequencyScratch = new Uint32Array(1024);
let scoreScratch = new Float64Array(0);
/**
 * addMany's working lists (each document's distinct term ids, their frequencies, where each
 * document ends, each term's gain): reused by the loads of small users, let go after a large one
 * (past KEPT_BULK_INTS: a load of 100,000 memories needs ~14 MB of it).
 */
let bulkScratch = new Int32Array(0);
const KEPT_BULK_INTS = 1 << 16;

/** At least `ints` int32 entries of scratch, holding what the last call left: addMany writes each part before it reads it. */
function bulkInts(ints: number): Int32Array {
  if (bulkScratch.length < ints) bulkScratch = new Int32Array(Math.max(ints, 2 * bulkScratch.length));
  return bulkScratch;
}

export class Bm25Index {
  readonly k1: number;
  readonly b: number;

  /*
   * Dense document slots and dense term ids, a table row for each, and every list in one of two
   * pools of int32 pairs (pair-pool.ts) rather than a JS array each: a posting is 8 bytes, and a
   * user's index a handful of objects for the collector instead of two or three a document
   * (bench/README.md, "Memory per memory, part by part").
   */
  private readonly slotByKey = new Map<number, number>();
  private readonly slotKeys: number[] = [];
  private slots: Int32Array<ArrayBuffer> = new Int32Array(0);
  private readonly slotPairs = new PairPool();
  private readonly freeSlots: number[] = [];

  private readonly termIdByTerm = new Map<string, number>();
  private readonly terms: (string | undefined)[] = [];
  private termTable: Int32Array<ArrayBuffer> = new Int32Array(0);
  private readonly postingPairs = new PairPool();
  /** Term ids handed out so far (free ones included). */
  private termIds = 0;
  private readonly freeTermIds: number[] = [];

  private totalLength = 0;

  constructor(params: Bm25Params = {}) {
    this.k1 = params.k1 ?? 1.2;
    this.b = params.b ?? 0.75;
  }

  /** Number of documents. */
  get size(): number {
    return this.slotByKey.size;
  }

  /** Int32 entries the index's typed arrays hold (their capacity, waste included): 4 bytes each, outside the JS heap. */
  get heldInts(): number {
    return this.slotPairs.ints.length + this.postingPairs.ints.length + this.slots.length + this.termTable.length;
  }

  /** How many documents hold the term. */
  documentFrequency(term: string): number {
    const termId = this.termIdByTerm.get(term);
    return termId === undefined ? 0 : this.termTable[termId * TERM_STRIDE + TERM_COUNT];
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
      if (frequencyScratch[termId]++ === 0) distinctTermIds.push(termId);
    }

    const slot = this.takeSlot();
    const start = this.slotPairs.allocate(distinctTermIds.length, () => this.slotRegions());
    for (let i = 0; i < distinctTermIds.length; i += 1) {
      const termId = distinctTermIds[i]!;
      this.slotPairs.ints[start + 2 * i] = termId;
      this.slotPairs.ints[start + 2 * i + 1] = this.termTable[termId * TERM_STRIDE + TERM_COUNT];
      this.appendPosting(termId, slot, frequencyScratch[termId]!);
      frequencyScratch[termId] = 0;
    }
    this.placeDocument(key, slot, start, distinctTermIds.length, terms.length);
  }

  /**
   * Indexes documents as `add` of each in turn would (a key met again replaces its document),
   * growing each posting list once, to its final size, and leaving no waste in either pool: the
   * shape of a user's load, whose lists would otherwise each grow and move a dozen times.
   */
  addMany(documents: ReadonlyArray<{ key: number; terms: readonly string[] }>): void {
    const keys = new Set<number>();
    for (const { key } of documents) keys.add(key);
    if (documents.length < BULK_DOCUMENTS || keys.size < documents.length) {
      for (const { key, terms } of documents) this.add(key, terms);
      return;
    }
    for (const key of keys) this.remove(key);

    // Each document's distinct term ids and their frequencies, and how many postings each term gains.
    let terms = 0;
    for (const document of documents) terms += document.terms.length;
    this.reserveTerms(this.termIds + terms);
    // One scratch array, cut in four: distinct and frequencies (a pair per term at most), ends, and gains (below).
    const scratch = bulkInts(2 * terms + documents.length + this.termIds + terms);
    const distinct = scratch.subarray(0, terms);
    const frequencies = scratch.subarray(terms, 2 * terms);
    const ends = scratch.subarray(2 * terms, 2 * terms + documents.length);
    let pairs = 0;
    for (let d = 0; d < documents.length; d++) {
      const from = pairs;
      for (const term of documents[d].terms) {
        const termId = this.termIdFor(term);
        if (frequencyScratch[termId]++ === 0) distinct[pairs++] = termId;
      }
      for (let i = from; i < pairs; i++) {
        frequencies[i] = frequencyScratch[distinct[i]];
        frequencyScratch[distinct[i]] = 0;
      }
      ends[d] = pairs;
    }
    // The table sized for every term a word at a time could have been: cut to what came.
    if (this.termTable.length > 2 * TERM_STRIDE * this.termIds + 1024) this.termTable = grownInts(this.termTable, TERM_STRIDE * (this.termIds + (this.termIds >> 2)));
    const gains = scratch.subarray(2 * terms + documents.length, 2 * terms + documents.length + this.termIds);
    gains.fill(0);
    for (let i = 0; i < pairs; i++) gains[distinct[i]]++;

    // Every list that must grow moves once to the pool's end with room for all it gains.
    const table = this.termTable;
    const roomFor = (termId: number): number => {
      const needed = table[termId * TERM_STRIDE + TERM_COUNT] + gains[termId];
      return needed >= SLACK_FROM ? needed + (needed >> 3) : needed;
    };
    const outgrows = (termId: number): boolean => gains[termId] > 0 && table[termId * TERM_STRIDE + TERM_COUNT] + gains[termId] > table[termId * TERM_STRIDE + TERM_ROOM];
    let moving = 0;
    for (let termId = 0; termId < gains.length; termId++) if (outgrows(termId)) moving += roomFor(termId);
    const pool = this.postingPairs;
    pool.reserve(moving, () => this.termRegions());
    for (let termId = 0; termId < gains.length; termId++) if (outgrows(termId)) this.moveList(termId, roomFor(termId));

    this.reserveSlots(this.slotKeys.length + documents.length);
    const slotPool = this.slotPairs;
    slotPool.reserve(pairs, () => this.slotRegions());
    const postings = pool.ints;
    for (let d = 0, from = 0; d < documents.length; from = ends[d], d++) {
      const slot = this.takeSlot();
      const start = slotPool.allocate(ends[d] - from, () => this.slotRegions());
      for (let i = from; i < ends[d]; i++) {
        const row = distinct[i] * TERM_STRIDE;
        const count = table[row + TERM_COUNT];
        const at = start + 2 * (i - from);
        slotPool.ints[at] = distinct[i];
        slotPool.ints[at + 1] = count;
        const posting = table[row + TERM_START] + 2 * count;
        postings[posting] = slot;
        postings[posting + 1] = frequencies[i];
        table[row + TERM_COUNT] = count + 1;
      }
      this.placeDocument(documents[d].key, slot, start, ends[d] - from, documents[d].terms.length);
    }
    if (bulkScratch.length > KEPT_BULK_INTS) bulkScratch = new Int32Array(0);
  }

  /**
   * Removes a document; a no-op for an unknown key. Each of its postings is overwritten by the
   * last posting of the same list, whose document is told its new position, so the cost depends
   * on the sizes of the documents involved, never on the size of the index.
   */
  remove(key: number): void {
    const slot = this.slotByKey.get(key);
    if (slot === undefined) return;
    const slotInts = this.slotPairs.ints;
    const postings = this.postingPairs.ints;
    const table = this.termTable;
    const slots = this.slots;
    const start = slots[slot * SLOT_STRIDE + SLOT_START];
    const end = start + 2 * slots[slot * SLOT_STRIDE + SLOT_TERMS];
    for (let i = start; i < end; i += 2) {
      const termId = slotInts[i];
      const position = slotInts[i + 1];
      const row = termId * TERM_STRIDE;
      const base = table[row + TERM_START];
      const lastPosition = table[row + TERM_COUNT] - 1;
      if (position !== lastPosition) {
        const movedSlot = postings[base + 2 * lastPosition];
        postings[base + 2 * position] = movedSlot;
        postings[base + 2 * position + 1] = postings[base + 2 * lastPosition + 1];
        let j = slots[movedSlot * SLOT_STRIDE + SLOT_START];
        const movedEnd = j + 2 * slots[movedSlot * SLOT_STRIDE + SLOT_TERMS];
        while (j < movedEnd && slotInts[j] !== termId) j += 2;
        if (j === movedEnd) throw new Error(`BM25 index inconsistent: slot ${movedSlot} holds no pair of term ${termId}`);
        slotInts[j + 1] = position;
      }
      table[row + TERM_COUNT] = lastPosition;
      if (lastPosition === 0) this.releaseTerm(termId);
    }

    this.slotPairs.free(slots[slot * SLOT_STRIDE + SLOT_TERMS]);
    this.totalLength -= slots[slot * SLOT_STRIDE + SLOT_LENGTH];
    slots[slot * SLOT_STRIDE + SLOT_START] = -1;
    slots[slot * SLOT_STRIDE + SLOT_TERMS] = 0;
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
    const postings = this.postingPairs.ints;
    const table = this.termTable;
    const slots = this.slots;

    const seen = new Set<number>();
    for (let q = 0; q < queryTerms.length; q++) {
      const termId = this.termIdByTerm.get(queryTerms[q]!);
      if (termId === undefined || seen.has(termId)) continue;
      seen.add(termId);
      const documentFrequency = table[termId * TERM_STRIDE + TERM_COUNT];
      if (skipsTerm(documentCount, documentFrequency, termWeights?.[q])) continue;
      const idf = termIdf(documentCount, documentFrequency, termWeights?.[q]);
      const start = table[termId * TERM_STRIDE + TERM_START];
      const end = start + 2 * documentFrequency;
      for (let i = start; i < end; i += 2) {
        const slot = postings[i];
        const frequency = postings[i + 1];
        visit(this.slotKeys[slot]!, (idf * frequency * (k1 + 1)) / (frequency + constantNorm + lengthWeight * slots[slot * SLOT_STRIDE + SLOT_LENGTH]));
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
    if (scoreScratch.length < this.slotKeys.length) scoreScratch = new Float64Array(Math.max(1024, this.slotKeys.length * 2));
    const sums = scoreScratch;
    const touched: number[] = [];
    try {
      const { k1, lengthWeight, constantNorm } = query;
      const postings = this.postingPairs.ints;
      const table = this.termTable;
      const slots = this.slots;
      // A term adds less than idf · (k1 + 1) to any document (tf / (tf + norm) < 1).
      const order = termIds.map((_, t) => t).sort((a, b) => idfs[b] - idfs[a]);
      let unwalked = order.reduce((sum, t) => sum + idfs[t] * (k1 + 1), 0);
      let best = 0;
      let threshold = 0;
      let walked = 0;
      for (let w = 0; w < order.length; w++) {
        walked = w + 1;
        const t = order[w];
        const row = termIds[t] * TERM_STRIDE;
        const start = table[row + TERM_START];
        const end = start + 2 * table[row + TERM_COUNT];
        const idf = idfs[t];
        for (let i = start; i < end; i += 2) {
          const slot = postings[i];
          const frequency = postings[i + 1];
          // Every term score is positive (idf > 0, frequency ≥ 1): a zero sum marks a document not met yet.
          if (sums[slot] === 0) touched.push(slot);
          const sum = (sums[slot] += (idf * frequency * (k1 + 1)) / (frequency + constantNorm + lengthWeight * slots[slot * SLOT_STRIDE + SLOT_LENGTH]));
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
        if (sums[slot] + unwalked < threshold * SAFE) continue;
        const key = this.slotKeys[slot]!;
        if (passes && !passes(key)) continue;
        heap.offer(key, this.slotScore(slot, query));
      }
      return heap.sorted();
    } finally {
      // The sums are every index's: all zero again, whatever `passes` did.
      for (const slot of touched) sums[slot] = 0;
    }
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
    const slotInts = this.slotPairs.ints;
    const postings = this.postingPairs.ints;
    const table = this.termTable;
    const row = slot * SLOT_STRIDE;
    const start = this.slots[row + SLOT_START];
    const end = start + 2 * this.slots[row + SLOT_TERMS];
    const length = this.slots[row + SLOT_LENGTH];
    let sum = 0;
    for (let t = 0; t < termIds.length; t++) {
      const termId = termIds[t];
      for (let j = start; j < end; j += 2) {
        if (slotInts[j] !== termId) continue;
        const frequency = postings[table[termId * TERM_STRIDE + TERM_START] + 2 * slotInts[j + 1] + 1];
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
      const documentFrequency = this.termTable[termId * TERM_STRIDE + TERM_COUNT];
      if (skipsTerm(documentCount, documentFrequency, termWeights?.[q])) continue;
      termIds.push(termId);
      idfs.push(termIdf(documentCount, documentFrequency, termWeights?.[q]));
    }
    return { termIds, idfs, k1, lengthWeight: (k1 * this.b) / averageLength, constantNorm: k1 * (1 - this.b) };
  }

  private termIdFor(term: string): number {
    const existing = this.termIdByTerm.get(term);
    if (existing !== undefined) return existing;
    const termId = this.freeTermIds.pop() ?? this.termIds++;
    if (termId >= this.termTable.length / TERM_STRIDE) this.reserveTerms(Math.max(32, 2 * termId));
    this.termIdByTerm.set(term, termId);
    this.terms[termId] = term;
    // No room yet: its first posting takes some at the pool's end.
    const row = termId * TERM_STRIDE;
    this.termTable[row + TERM_START] = this.postingPairs.end;
    this.termTable[row + TERM_COUNT] = 0;
    this.termTable[row + TERM_ROOM] = 0;
    if (termId >= frequencyScratch.length) {
      const grown = new Uint32Array(Math.max(frequencyScratch.length * 2, termId + 1));
      grown.set(frequencyScratch);
      frequencyScratch = grown;
    }
    return termId;
  }

  /** A free slot, or a new one (its table row made). */
  private takeSlot(): number {
    const slot = this.freeSlots.pop() ?? this.slotKeys.length;
    if (slot >= this.slots.length / SLOT_STRIDE) this.reserveSlots(Math.max(16, 2 * slot));
    return slot;
  }

  private placeDocument(key: number, slot: number, start: number, distinctTerms: number, length: number): void {
    const row = slot * SLOT_STRIDE;
    this.slots[row + SLOT_START] = start;
    this.slots[row + SLOT_TERMS] = distinctTerms;
    this.slots[row + SLOT_LENGTH] = length;
    this.slotKeys[slot] = key;
    this.slotByKey.set(key, slot);
    this.totalLength += length;
  }

  /** Adds a posting at the end of the term's list, giving the list more room first when it is full. */
  private appendPosting(termId: number, slot: number, frequency: number): void {
    const row = termId * TERM_STRIDE;
    const count = this.termTable[row + TERM_COUNT];
    if (count === this.termTable[row + TERM_ROOM]) this.growPostingList(termId);
    const at = this.termTable[row + TERM_START] + 2 * count;
    this.postingPairs.ints[at] = slot;
    this.postingPairs.ints[at + 1] = frequency;
    this.termTable[row + TERM_COUNT] = count + 1;
  }

  /**
   * More room for a full list (about half as much again): in place when the list is the last in
   * the pool, else the list moves to the pool's end and its old place is waste until the pool is
   * compacted (pair-pool.ts).
   */
  private growPostingList(termId: number): void {
    const row = termId * TERM_STRIDE;
    const room = this.termTable[row + TERM_ROOM];
    const grown = room < 4 ? room + 1 : room + (room >> 1);
    const pool = this.postingPairs;
    // Room for a move, reserved first: a compaction it may bring moves this list too.
    pool.reserve(grown, () => this.termRegions());
    if (room > 0 && this.termTable[row + TERM_START] + 2 * room === pool.end) {
      pool.extendLast(grown - room);
      this.termTable[row + TERM_ROOM] = grown;
    } else {
      this.moveList(termId, grown);
    }
  }

  /** Moves the term's list to the pool's end with room for `room` pairs (reserved by the caller); its old place is waste. */
  private moveList(termId: number, room: number): void {
    const row = termId * TERM_STRIDE;
    const pool = this.postingPairs;
    const start = this.termTable[row + TERM_START];
    const moved = pool.allocate(room, () => this.termRegions());
    pool.ints.copyWithin(moved, start, start + 2 * this.termTable[row + TERM_COUNT]);
    pool.free(this.termTable[row + TERM_ROOM]);
    this.termTable[row + TERM_START] = moved;
    this.termTable[row + TERM_ROOM] = room;
  }

  /** Every term's list with its room, for a compaction of the postings' pool. */
  private termRegions(): PoolRegions {
    return { count: this.termIds, table: this.termTable, stride: TERM_STRIDE, startField: TERM_START, pairsField: TERM_ROOM };
  }

  /** Every document's terms, for a compaction of the slots' pool; a free slot holds none. */
  private slotRegions(): PoolRegions {
    return { count: this.slotKeys.length, table: this.slots, stride: SLOT_STRIDE, startField: SLOT_START, pairsField: SLOT_TERMS };
  }

  /** Table rows for `terms` term ids. */
  private reserveTerms(terms: number): void {
    if (TERM_STRIDE * terms > this.termTable.length) this.termTable = grownInts(this.termTable, TERM_STRIDE * terms);
  }

  /** Table rows for `slots` slots, the new ones free. */
  private reserveSlots(slots: number): void {
    if (SLOT_STRIDE * slots <= this.slots.length) return;
    const rows = this.slots.length / SLOT_STRIDE;
    const grown = grownInts(this.slots, SLOT_STRIDE * slots);
    for (let slot = rows; slot < slots; slot++) grown[slot * SLOT_STRIDE + SLOT_START] = -1;
    this.slots = grown;
  }

  // Terms nobody uses any more are forgotten, so replacing documents forever does not grow the index.
  private releaseTerm(termId: number): void {
    this.termIdByTerm.delete(this.terms[termId]!);
    this.terms[termId] = undefined;
    this.postingPairs.free(this.termTable[termId * TERM_STRIDE + TERM_ROOM]);
    this.termTable[termId * TERM_STRIDE + TERM_ROOM] = 0;
    this.freeTermIds.push(termId);
  }
}
