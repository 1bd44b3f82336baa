import { describe, expect, it } from 'vitest';
import { cueColumns, cueQuery } from '../../../src/retrieval/corpus/cue-columns.js';
import type { CorpusQuery, CorpusUnit } from '../../../src/retrieval/corpus/corpus-types.js';
import { CUE_PARTS, FUSED_PARTS } from '../../../src/retrieval/fuse-scores.js';
import { DEFAULT_RETRIEVAL_WEIGHTS } from '../../../src/retrieval/retrieval-config.js';

const DAY = 86_400_000;
const weights = { ...DEFAULT_RETRIEVAL_WEIGHTS, decayWeight: 0.5, decayHalfLifeDays: 10 };
function unit(extra: Partial<CorpusUnit>): CorpusUnit {
  return {
    seq: 0, vector: null, terms: [], speaker: null, sessionId: null, messageKey: null, timeMs: 100 * DAY, importance: 0.5, tags: [],
    hasTimeExpression: false, eventPeriod: null, isQuestion: false, firstPerson: false, textKey: '', entities: [], ...extra,
  };
}
const query = (extra: Partial<CorpusQuery>): CorpusQuery => ({
  main: { terms: [], vector: new Float32Array(0) }, options: [], speaker: null, wantedTags: new Set(), whenQuestion: false, period: null, ...extra,
});

describe('the parts list', () => {
  it('is the fused score\'s order: the four text parts, the added cues, then the two multipliers', () => {
    expect(FUSED_PARTS.map((part) => `${part.kind} ${part.name}`)).toEqual([
      'add dense', 'add bm25', 'add options', 'add neighbours', 'add speaker', 'add role', 'add tags', 'add timeCue', 'add period',
      'add eventPeriod', 'add questionTurn', 'add disclosure', 'add entity', 'multiply importance', 'multiply decay',
    ]);
    expect(CUE_PARTS.map((part) => part.name)).toEqual(FUSED_PARTS.filter((part) => 'value' in part).map((part) => part.name));
    expect(CUE_PARTS.map((part) => part.name)).not.toContain('dense');
  });
});

describe('cueColumns', () => {
  const units = [
    unit({ seq: 0, speaker: 'ann', tags: ['Work'], hasTimeExpression: true, firstPerson: true, timeMs: 100 * DAY }),
    unit({ seq: 1, speaker: 'bob', isQuestion: true, importance: 1, timeMs: 90 * DAY, eventPeriod: { startMs: 95 * DAY, endMs: 96 * DAY } }),
  ];
  const catchUp = Uint8Array.from([1, 0]);
  const candidates = Int32Array.from([1, 0]);

  it('computes each cue per candidate, in candidate order', () => {
    const q = query({ speaker: 'ann', wantedTags: new Set(['work']), whenQuestion: true, period: { startMs: 95 * DAY, endMs: 96 * DAY }, aboutPerson: true });
    const columns = cueColumns(units, catchUp, candidates, cueQuery(q, weights, 100 * DAY), weights);
    expect([...columns.speaker]).toEqual([0, weights.speakerBoost]);
    expect([...columns.tags]).toEqual([0, weights.tagBoost]);
    expect([...columns.timeCue]).toEqual([0, weights.timeCueBoost + weights.catchUpBoost]);
    expect([...columns.period]).toEqual([0, 0]);
    expect([...columns.eventPeriod]).toEqual([weights.eventPeriodBoost, 0]);
    expect([...columns.questionTurn]).toEqual([-weights.questionTurnPenalty, 0]);
    expect([...columns.disclosure]).toEqual([0, weights.disclosureBoost + weights.aboutPersonBoost]);
    expect([...columns.importance]).toEqual([1 + weights.importanceWeight * 0.5, 1]);
    // Ten days older than the newest unit: one half-life, on half the score.
    expect([...columns.decay]).toEqual([0.75, 1]);
  });

  it('gives the units mentioning a queried entity its specificity times entityBoost, nothing while the boost is 0', () => {
    const named = [unit({ seq: 0, entities: [{ key: 'sweden', surface: 'Sweden', kind: 'name', confident: true }] }), unit({ seq: 1 })];
    const on = { ...weights, entityBoost: 0.2 };
    const entityWeights = new Map([['sweden', 0.5]]);
    expect([...cueColumns(named, catchUp, Int32Array.from([0, 1]), cueQuery(query({}), on, 100 * DAY, entityWeights), on).entity]).toEqual([0.1, 0]);
    expect([...cueColumns(named, catchUp, Int32Array.from([0, 1]), cueQuery(query({}), weights, 100 * DAY, entityWeights), weights).entity]).toEqual([0, 0]);
  });

  it('leaves the cues the query lacks neutral: 0 added, multipliers still computed', () => {
    const columns = cueColumns(units, catchUp, candidates, cueQuery(query({}), weights, 100 * DAY), weights);
    for (const name of ['speaker', 'role', 'tags', 'timeCue', 'period', 'eventPeriod', 'disclosure', 'entity'] as const) expect([...columns[name]]).toEqual([0, 0]);
    expect([...columns.decay]).toEqual([0.75, 1]);
    expect(Object.keys(columns).sort()).toEqual(CUE_PARTS.map((part) => part.name).sort());
  });
});
