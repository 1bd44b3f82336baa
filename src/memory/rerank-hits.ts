import type { Reranker } from '../embedding/reranker.js';
import { blendReranked, type Reranked } from '../retrieval/rerank-blend.js';
import { startSpan } from '../telemetry/tracing.js';
import type { SearchHit, SearchRequest } from './types.js';

/** A reranker the user brought (MEMORYPOOL_RERANKER_DIR) and how much it says (docs/configuration.md, "A reranker you bring"). */
export interface RerankSettings {
  reranker: Reranker;
  /** How many of the fused ranking's best hits it re-scores. */
  top: number;
  /** Its share of the final score (rerank-blend.ts). */
  weight: number;
}

/** Whether this request is reranked: a reranker is configured and the request did not turn it off (`rerank: false`). */
export function reranks(settings: RerankSettings | undefined, request: Pick<SearchRequest, 'rerank'>): settings is RerankSettings {
  return settings !== undefined && request.rerank !== false;
}

/** How many hits the fusion must answer so that the reranker sees its top N and the answer still holds `limit`. */
export function rankedLimit(settings: RerankSettings | undefined, request: Pick<SearchRequest, 'rerank' | 'limit'>): number {
  return reranks(settings, request) ? Math.max(request.limit, settings.top) : request.limit;
}

/**
 * The answer after the reranker: the fused ranking's best `top` hits re-scored against the query
 * (each hit's standalone content: who said it and when, as a reader would see it), blended with
 * their fused scores and re-ordered; the rest below, in their order; cut at `limit`. The pairs of
 * one Search are scored together and apart from any other's (reranker.ts), so the answer is the
 * same alone or under load. A reranker that fails fails the Search (RERANKER_UNAVAILABLE, 503):
 * nothing is written by a Search, so nothing is left half done.
 */
export async function rerankHits(settings: RerankSettings, query: string, hits: readonly SearchHit[], limit: number): Promise<SearchHit[]> {
  const head = hits.slice(0, settings.top);
  if (head.length === 0) return [];
  const span = startSpan('memorypool.rerank', { 'memorypool.rerank.pairs': head.length });
  try {
    const logits = await settings.reranker.score(query, head.map((hit) => hit.content));
    const blended = blendReranked(hits.map((hit) => hit.score), logits, settings.weight);
    return blended.order.slice(0, limit).map((i, rank) => rescored(hits[i]!, blended, rank));
  } catch (error) {
    span.fail(error);
    throw error;
  } finally {
    span.end();
  }
}

/**
 * The hit at `rank` of the blend with its final score; an explained hit's terms go on past the
 * fusion's: `rerank_fused_share` turns the fused score into its share of the blend, `reranker`
 * adds the reranker's, so replaying them still gives `explanation.score`.
 */
function rescored(hit: SearchHit, blended: Reranked, rank: number): SearchHit {
  const score = blended.scores[rank]!;
  const out: SearchHit = { ...hit, score: Math.round(score * 1e6) / 1e6 };
  if (hit.explanation) {
    const terms = [...hit.explanation.terms, { term: 'rerank_fused_share' as const, kind: 'add' as const, value: blended.fusedShares[rank]! - hit.explanation.score }];
    if (blended.rerankerShares[rank]! !== 0) terms.push({ term: 'reranker' as const, kind: 'add' as const, value: blended.rerankerShares[rank]! });
    out.explanation = { score, terms };
  }
  return out;
}
