import { analyze } from '../retrieval/analyzer.js';
import { entityMentions } from '../retrieval/entities/entity-mentions.js';
import { PLATFORM_SEARCH_OVERRIDES, resolveWeights, type RetrievalWeights } from '../retrieval/retrieval-config.js';
import { expandQuery } from '../retrieval/query-expansion.js';
import { wordNet } from '../retrieval/lexicon/wordnet.js';
import { addressedRole, asksAboutPerson, namedSpeaker } from '../retrieval/query-cues.js';
import { namedPeriod } from '../retrieval/time-cues/named-period.js';
import { isWhenQuestion } from '../retrieval/time-cues/when-question.js';
import type { CorpusQuery, QueryText } from '../retrieval/corpus/corpus-types.js';
import type { SearchRequest } from './types.js';

/**
 * What a search asks of a user's corpus, worked out from the request alone and two facts of the
 * corpus (its speakers, its newest time): pure, so a unit test pins every cue. The service adds
 * the filter (it reads the user's records) and the vectors.
 */

export interface SearchOverrides {
  weights?: Partial<RetrievalWeights>;
  /** Each distinct text once, or (false) every copy: eval's ablation of what /search does. */
  collapseDuplicates?: boolean;
}

export interface QueryPlan {
  weights: RetrievalWeights;
  query: Omit<CorpusQuery<QueryText>, 'filter'>;
}

/** The texts to encode: the query (as sent when it is only white space), then each non-blank option, trimmed. */
export function queryTexts(request: Pick<SearchRequest, 'query' | 'options'>): string[] {
  const options = (request.options ?? []).map((option) => option.trim()).filter((option) => option !== '');
  return [request.query.trim() || request.query, ...options];
}

export function planQuery(
  request: SearchRequest,
  texts: readonly string[],
  corpus: { speakers: string[]; newestTimeMs: number },
  defaults: RetrievalWeights,
  overrides: SearchOverrides = {},
): QueryPlan {
  const profile = request.profile === 'platform' ? PLATFORM_SEARCH_OVERRIDES : undefined;
  const weights = overrides.weights || profile ? resolveWeights({ ...defaults, ...profile, ...overrides.weights }) : defaults;
  const analysed: QueryText[] = texts.map((text) => ({ terms: analyze(text) }));
  if (weights.expansionWeight > 0 || weights.hypernymWeight > 0) analysed[0] = expandQuery(texts[0]!, analysed[0]!, wordNet(), weights);
  const wantedTags = new Set(request.query.toLowerCase().match(/[\p{L}\p{N}_-]+/gu) ?? []);
  if (request.filter?.tag) wantedTags.add(request.filter.tag.toLowerCase());
  return {
    weights,
    query: {
      main: analysed[0],
      options: analysed.slice(1),
      speaker: namedSpeaker(request.query, corpus.speakers),
      role: addressedRole(request.query, corpus.speakers),
      wantedTags,
      whenQuestion: isWhenQuestion(request.query),
      aboutPerson: asksAboutPerson(request.query),
      // Only when the cue weighs something: the query's names cost nothing otherwise.
      entities: weights.entityBoost !== 0 ? entityMentions(request.query).map((mention) => mention.key) : undefined,
      period: namedPeriod(request.query, new Date(corpus.newestTimeMs)),
      collapseDuplicates: overrides.collapseDuplicates ?? request.collapseDuplicates === true,
      explain: request.explain === true,
    },
  };
}
