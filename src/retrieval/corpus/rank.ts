import { fuseColumns, fuseScore, partsAt, withNeighbours, type CueColumns, type FusedColumns, type ScoreTerm } from '../fuse-scores.js';
import type { RetrievalWeights } from '../retrieval-config.js';
import type { CorpusQuery, RankedUnit } from './corpus-types.js';
import { rankedPrefix } from './ranked-order.js';

/** What the rank reads of the slot layout (`SlotLayout` is one): seqs, turn neighbours, message and text ids. */
export interface RankLayout {
  readonly units: readonly { readonly seq: number }[];
  readonly previousTurn: Int32Array;
  readonly nextTurn: Int32Array;
  /** Units split from one message share an id; -1 for a unit that is a whole memory. */
  readonly message: Int32Array;
  readonly messageCount: number;
  /** Units of the same text share an id. */
  readonly text: Int32Array;
  readonly textCount: number;
}

/** The candidates' scored parts, all indexed by position among the candidates. */
export interface RankInput {
  /** Slots of the candidates. */
  readonly candidates: Int32Array;
  /** Position of a slot among the candidates, -1 when not one. */
  readonly position: (slot: number) => number;
  /** Each text's dense share: the main text's, then each option's (none when options weigh nothing). */
  readonly dense: readonly Float64Array[];
  /** Each text's lexical share, in the same order. */
  readonly lexical: readonly Float64Array[];
  readonly cues: CueColumns;
}

/**
 * The answer from the candidates' parts, a pure function of plain data: the option share, the
 * base score and the neighbours' shares complete `FUSED_PARTS`; then sorted (ties: newer
 * first), one result per message and, with `collapseDuplicates`, per text; cut at `limit`.
 */
export function rankCandidates(
  input: RankInput,
  layout: RankLayout,
  weights: Pick<RetrievalWeights, 'optionWeight' | 'neighbourWeight'>,
  query: Pick<CorpusQuery, 'collapseDuplicates' | 'explain'>,
  limit: number,
): RankedUnit[] {
  const { candidates, position, dense, lexical } = input;
  const count = candidates.length;

  const optionShare = new Float64Array(count);
  if (dense.length > 1 && weights.optionWeight > 0) {
    for (let o = 1; o < dense.length; o++) {
      const optionDense = dense[o];
      const optionLexical = lexical[o];
      for (let i = 0; i < count; i++) optionShare[i] = Math.max(optionShare[i], optionDense[i] + optionLexical[i]);
    }
    for (let i = 0; i < count; i++) optionShare[i] *= weights.optionWeight;
  }
  const mainDense = dense[0];
  const mainLexical = lexical[0];
  // The base score (what neighbours share) is the first three parts, summed as fuseScore sums them.
  const base = new Float64Array(count);
  for (let i = 0; i < count; i++) base[i] = mainDense[i] + mainLexical[i] + optionShare[i];

  const neighbours = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const slot = candidates[i];
    const previousTurn = layout.previousTurn[slot] >= 0 ? position(layout.previousTurn[slot]) : -1;
    const nextTurn = layout.nextTurn[slot] >= 0 ? position(layout.nextTurn[slot]) : -1;
    neighbours[i] = withNeighbours(0, previousTurn >= 0 ? base[previousTurn] : undefined, nextTurn >= 0 ? base[nextTurn] : undefined, weights.neighbourWeight);
  }
  const columns: FusedColumns = { ...input.cues, dense: mainDense, bm25: mainLexical, options: optionShare, neighbours };

  const score = fuseColumns(columns, count);
  const seqs = new Float64Array(count);
  for (let i = 0; i < count; i++) seqs[i] = layout.units[candidates[i]].seq;
  // Enough of the order for `limit` survivors in all but unusual answers (a message split into
  // many units, many copies of one text); the whole order otherwise.
  const prefix = rankedPrefix(score, seqs, count, limit * PREFIX_PER_RESULT + PREFIX_SLACK);
  const out = collect(prefix, input, layout, columns, score, seqs, query, limit);
  return out.length >= limit || prefix.length === count ? out : collect(rankedPrefix(score, seqs, count, count), input, layout, columns, score, seqs, query, limit);
}

/** How much of the order is sorted first: this many candidates per result wanted, plus the slack. */
const PREFIX_PER_RESULT = 4;
const PREFIX_SLACK = 32;

/** The answer from the order (or its prefix): one result per message and (collapsing) per text, up to `limit`. */
function collect(
  ranked: Uint32Array,
  input: RankInput,
  layout: RankLayout,
  columns: FusedColumns,
  score: Float64Array,
  seqs: Float64Array,
  query: Pick<CorpusQuery, 'collapseDuplicates' | 'explain'>,
  limit: number,
): RankedUnit[] {
  const { candidates } = input;
  const count = candidates.length;
  // Copies of one text among the candidates, so that the one answered can say how many it stands for.
  const copies = query.collapseDuplicates ? new Int32Array(layout.textCount) : null;
  if (copies) for (let i = 0; i < count; i++) copies[layout.text[candidates[i]]]++;

  // One result per message, its best part: the parts of one long message would otherwise crowd
  // the top of the list with one turn, and a result stands for the turn it comes from.
  const seenMessage = new Uint8Array(layout.messageCount);
  const seenText = copies ? new Uint8Array(layout.textCount) : null;
  const out: RankedUnit[] = [];
  for (let r = 0; r < ranked.length && out.length < limit; r++) {
    const i = ranked[r];
    const message = layout.message[candidates[i]];
    if (message >= 0) {
      if (seenMessage[message] === 1) continue;
      seenMessage[message] = 1;
    }
    const text = layout.text[candidates[i]];
    if (seenText) {
      if (seenText[text] === 1) continue;
      seenText[text] = 1;
    }
    const unit: RankedUnit = { seq: seqs[i], score: score[i] };
    if (copies && copies[text] > 1) unit.duplicates = copies[text] - 1;
    if (query.explain) {
      // fuseScore's own computation, this time listing its terms: fuseColumns repeats it exactly.
      const terms: ScoreTerm[] = [];
      const explained = fuseScore(partsAt(columns, i), terms);
      unit.score = explained;
      unit.explanation = { score: explained, terms };
    }
    out.push(unit);
  }
  return out;
}
