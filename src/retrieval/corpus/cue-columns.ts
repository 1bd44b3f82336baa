import { CUE_PARTS, type CueColumns, type CueQuery, type CueUnit } from '../fuse-scores.js';
import type { RetrievalWeights } from '../retrieval-config.js';
import type { CorpusQuery, QueryText } from './corpus-types.js';

const NO_ENTITIES: ReadonlyMap<string, number> = new Map();

/**
 * The query's cues as `FUSED_PARTS` reads them; `newestTimeMs` is the user's newest unit's time,
 * `entityWeights` the specificity of each entity of the query the user knows (see `UserCorpus`).
 */
export function cueQuery(query: CorpusQuery<QueryText>, weights: RetrievalWeights, newestTimeMs: number, entityWeights: ReadonlyMap<string, number> = NO_ENTITIES): CueQuery {
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
    entityWeights: weights.entityBoost !== 0 ? entityWeights : NO_ENTITIES,
  };
}

/**
 * Every cue of `FUSED_PARTS` for each candidate (`units` and `catchUpTurn` by slot), one column
 * per cue. A cue the query lacks is neutral for every unit: its column is filled, not computed.
 * Generated from the list once, one pass over the candidates with a call site per cue, so that
 * each cue's function is inlined as the hand-written loop's code was.
 */
export const cueColumns: (units: readonly CueUnit[], catchUpTurn: Uint8Array, candidates: Int32Array, query: CueQuery, weights: RetrievalWeights) => CueColumns =
  generateCueColumns();

function generateCueColumns(): typeof cueColumns {
  const setup = CUE_PARTS.flatMap((part, k) => [
    `const c${k} = new Float64Array(count);`,
    `const v${k} = parts[${k}].value;`,
    `const on${k} = ${part.applies ? `parts[${k}].applies(query, weights)` : 'true'};`,
    ...(part.kind === 'multiply' ? [`if (!on${k}) c${k}.fill(1);`] : []),
  ]);
  const compute = CUE_PARTS.map((_part, k) => `if (on${k}) c${k}[i] = v${k}(unit, catchUp, query, weights);`);
  const result = CUE_PARTS.map(({ name }, k) => `${JSON.stringify(name)}: c${k}`);
  const body = [
    'const count = candidates.length;',
    ...setup,
    'for (let i = 0; i < count; i++) {',
    'const slot = candidates[i];',
    'const unit = units[slot];',
    'const catchUp = catchUpTurn[slot] === 1;',
    ...compute,
    '}',
    `return { ${result.join(', ')} };`,
  ];
  const make = new Function('parts', `return (units, catchUpTurn, candidates, query, weights) => {\n${body.join('\n')}\n};`);
  return make(CUE_PARTS) as typeof cueColumns;
}
