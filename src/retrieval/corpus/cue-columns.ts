import { CUE_PARTS, type CueColumns, type CueQuery, type CueUnit } from '../fuse-scores.js';
import type { RetrievalWeights } from '../retrieval-config.js';
import type { CorpusQuery, QueryText } from './corpus-types.js';

/** The query's cues as `FUSED_PARTS` reads them; `newestTimeMs` is the user's newest unit's time. */
export function cueQuery(query: CorpusQuery<QueryText>, weights: RetrievalWeights, newestTimeMs: number): CueQuery {
  const { speaker, role } = query;
  return {
    speaker,
    role,
    wantedTags: query.wantedTags,
    whenQuestion: query.whenQuestion,
    aboutPerson: query.aboutPerson === true,
    period: query.period,
    queried: weights.disclosureBoost !== 0 || weights.aboutPersonBoost !== 0 ? (speaker ?? role ?? null) : null,
    newestTimeMs,
  };
}

/**
 * Every cue of `FUSED_PARTS` for each candidate (`units` and `catchUpTurn` by slot), one column
 * per cue. A cue the query lacks is neutral for every unit: its column is filled, not computed.
 */
export function cueColumns(units: readonly CueUnit[], catchUpTurn: Uint8Array, candidates: Int32Array, query: CueQuery, weights: RetrievalWeights): CueColumns {
  const count = candidates.length;
  const columns = {} as CueColumns;
  for (const part of CUE_PARTS) {
    const column = new Float64Array(count);
    columns[part.name] = column;
    if (part.applies && !part.applies(query, weights)) {
      if (part.kind === 'multiply') column.fill(1);
      continue;
    }
    const { value } = part;
    for (let i = 0; i < count; i++) {
      const slot = candidates[i];
      column[i] = value(units[slot], catchUpTurn[slot] === 1, query, weights);
    }
  }
  return columns;
}
