import { DEFAULT_RETRIEVAL_WEIGHTS, profileWeights, type RetrievalWeights } from '../src/retrieval/retrieval-config.js';

/**
 * Every system one run can compare, in report order. The in-process ones all search the same
 * ingested service, each with its weight overrides; the peers get the service's exported units.
 * This table is the one place to change when a fusion term is added or renamed.
 */
export type SystemSpec =
  | { name: string; kind: 'service'; description: string; overrides: Partial<RetrievalWeights>; collapseDuplicates?: boolean }
  | { name: 'orama' | 'lancedb'; kind: 'peer'; description: string };

/** Every query-time term beyond the BM25/dense base score, switched off. */
const FUSION_TERMS_OFF: Partial<RetrievalWeights> = {
  neighbourWeight: 0,
  speakerBoost: 0,
  tagBoost: 0,
  timeCueBoost: 0,
  catchUpBoost: 0,
  periodBoost: 0,
  eventPeriodBoost: 0,
  questionTurnPenalty: 0,
  disclosureBoost: 0,
  aboutPersonBoost: 0,
  expansionWeight: 0,
  hypernymWeight: 0,
  importanceWeight: 0,
  decayWeight: 0,
};

export const SYSTEMS: readonly SystemSpec[] = [
  { name: 'hybrid', kind: 'service', description: 'the service as configured', overrides: {} },
  {
    name: 'no-collapse',
    kind: 'service',
    description: 'hybrid answering every copy of a repeated text (each distinct text once is what /search and /mem/search answer)',
    overrides: {},
    collapseDuplicates: false,
  },
  { name: 'bm25', kind: 'service', description: 'BM25 only, no fusion terms', overrides: { denseWeight: 0, ...FUSION_TERMS_OFF } },
  {
    name: 'dense',
    kind: 'service',
    description: 'dense cosine only (no previous-turn blend), no fusion terms',
    overrides: { denseWeight: 1, contextWeight: 0, ...FUSION_TERMS_OFF },
  },
  { name: 'no-neighbours', kind: 'service', description: 'hybrid without the session-neighbour term', overrides: { neighbourWeight: 0 } },
  { name: 'no-context', kind: 'service', description: 'hybrid without the previous-turn blend in the dense vector', overrides: { contextWeight: 0 } },
  { name: 'no-speaker', kind: 'service', description: 'hybrid without the named-speaker boost', overrides: { speakerBoost: 0 } },
  {
    name: 'no-disclosure',
    kind: 'service',
    description: "hybrid without the boost of the queried speaker's first-person turns (and its extra for questions about the person)",
    overrides: { disclosureBoost: 0, aboutPersonBoost: 0 },
  },
  { name: 'no-time-cues', kind: 'service', description: 'hybrid without the "when" and named-period boosts', overrides: { timeCueBoost: 0, catchUpBoost: 0, periodBoost: 0 } },
  { name: 'no-catch-up', kind: 'service', description: 'hybrid without the extra "when" boost for the first turns of a session', overrides: { catchUpBoost: 0 } },
  { name: 'no-decay', kind: 'service', description: 'hybrid without time decay', overrides: { decayWeight: 0 } },
  {
    name: 'with-decay',
    kind: 'service',
    description: "hybrid with the protocol's decay (what /mem/search uses)",
    overrides: { decayWeight: DEFAULT_RETRIEVAL_WEIGHTS.decayWeight },
  },
  { name: 'no-event-periods', kind: 'service', description: 'hybrid without the event-period boost', overrides: { eventPeriodBoost: 0 } },
  { name: 'no-question-penalty', kind: 'service', description: 'hybrid without the question-turn penalty', overrides: { questionTurnPenalty: 0 } },
  { name: 'no-expansion', kind: 'service', description: "hybrid without the WordNet expansion of the query's words", overrides: { expansionWeight: 0, hypernymWeight: 0 } },
  { name: 'no-importance', kind: 'service', description: 'hybrid without the importance multiplier', overrides: { importanceWeight: 0 } },
  { name: 'orama', kind: 'peer', description: 'Orama hybrid search on the same units and vectors' },
  { name: 'lancedb', kind: 'peer', description: 'LanceDB full-text + vector hybrid on the same units and vectors' },
];

/** The systems named on the command line (all when none), in table order. */
export function selectSystems(names: readonly string[] | undefined): SystemSpec[] {
  if (names === undefined || names.length === 0) return [...SYSTEMS];
  const known = new Map(SYSTEMS.map((system) => [system.name, system]));
  const unknown = names.filter((name) => !known.has(name));
  if (unknown.length > 0) {
    throw new Error(`unknown system(s) ${unknown.join(', ')}; choose from ${SYSTEMS.map((s) => s.name).join(', ')}`);
  }
  return SYSTEMS.filter((system) => names.includes(system.name));
}

/**
 * Overrides that change nothing because the platform's /search (which eval measures) already has
 * that value: an ablation of a term that is off measures nothing, and the report says so.
 */
export function noOpOverrides(overrides: Partial<RetrievalWeights>): string[] {
  const measured = profileWeights('platform');
  return (Object.keys(overrides) as Array<keyof RetrievalWeights>).filter((key) => overrides[key] === measured[key]);
}

export function describeOverrides(overrides: Partial<RetrievalWeights>): string {
  const entries = Object.entries(overrides);
  return entries.length === 0 ? 'defaults' : entries.map(([key, value]) => `${key}=${value}`).join(', ');
}
