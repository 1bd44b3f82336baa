import type { Memory, MemoryFilter, MemoryVersion } from '../domain/memory.js';
import { createError, type AppError } from '../errors.js';
import type { CorpusUnit } from '../retrieval/corpus/corpus-types.js';
import type { PreparedSearch } from '../retrieval/corpus/user-corpus.js';
import { versionOf, type StoredRecord } from '../store/stored-record.js';
import { listPage } from './list-pages.js';
import { entityCondition } from './entity-reads.js';
import { filterTest, timeWindowOnly } from './filter-match.js';
import { duplicateKey, hitContent, memoryTime, publicMemory } from './memory-records.js';
import { boundSearchRequest } from './query-bounds.js';
import { startSpan, type Span } from '../telemetry/tracing.js';
import { planQuery, queryTexts, type SearchOverrides } from './query-plan.js';
import { rankedLimit, rerankHits, reranks } from './rerank-hits.js';
import type { ServiceContext } from './service-context.js';
import type { ListRequest, SearchHit, SearchRequest } from './types.js';
import type { UserState } from './user-state.js';

/** The service's reads: search, list, get and history, each of one user as stored now. */

export async function searchMemories(service: ServiceContext, unbounded: SearchRequest, overrides: SearchOverrides = {}): Promise<SearchHit[]> {
  const request = boundSearchRequest(unbounded);
  const encoding = queryEncoding(service, request);
  // The encoder works while this thread does the rest. For a user held here with memories it
  // starts even before the freshness check (with PostgreSQL, a round trip); any other user is
  // checked first, so that searching an unknown user costs no encoder time.
  if ((service.cache.peek(request.userId)?.records.size ?? 0) > 0) encoding.start();
  const state = await service.existingUser(request.userId);
  if (!state || state.records.size === 0) return [];
  const vectors = encoding.start();
  // What needs no vector (BM25, the cues, the candidates) is scored while the encoder runs.
  const prepared = prepareUser(service, request, state, overrides);
  const hits = rankUser(prepared, state, await vectorsFor(vectors, [prepared]), rankedLimit(service.rerank, request));
  return reranks(service.rerank, request) ? rerankHits(service.rerank, request.query, hits, request.limit) : hits;
}

/**
 * One search over several users: the query encoded once, each user ranked as if searched alone,
 * the hits merged by score (the newer on ties) and each distinct text answered once across them
 * all, as within one user: the copies of the others folded into its `duplicates`.
 */
export async function searchUsers(service: ServiceContext, userIds: readonly string[], unbounded: Omit<SearchRequest, 'userId'>, overrides: SearchOverrides = {}): Promise<SearchHit[]> {
  const request = boundSearchRequest({ ...unbounded, userId: userIds[0] });
  const encoding = queryEncoding(service, request);
  if (userIds.some((userId) => (service.cache.peek(userId)?.records.size ?? 0) > 0)) encoding.start();
  const states = (await Promise.all(userIds.map((userId) => service.existingUser(userId)))).filter((state): state is UserState => state !== null && state.records.size > 0);
  if (states.length === 0) return [];
  const encoded = encoding.start();
  const prepared = states.map((state) => prepareUser(service, { ...request, userId: state.userId }, state, overrides));
  const vectors = await vectorsFor(encoded, prepared);
  const limit = rankedLimit(service.rerank, request);
  const hits = mergeUsers(states.flatMap((state, i) => rankUser(prepared[i]!, state, vectors, limit)), request.collapseDuplicates !== false && overrides.collapseDuplicates !== false, limit);
  return reranks(service.rerank, request) ? rerankHits(service.rerank, request.query, hits, request.limit) : hits;
}

/** The users' hits merged by score (the newer on ties), collapsing each distinct text into its best copy when asked, cut at `limit`. */
function mergeUsers(hits: SearchHit[], collapse: boolean, limit: number): SearchHit[] {
  const merged = hits.sort((a, b) => b.score - a.score || memoryTime(b.memory) - memoryTime(a.memory));
  if (!collapse) return merged.slice(0, limit);
  const kept = new Map<string, SearchHit>();
  for (const hit of merged) {
    const key = duplicateKey(hit.memory.text);
    const first = kept.get(key);
    if (first) first.duplicates = (first.duplicates ?? 0) + 1 + (hit.duplicates ?? 0);
    else kept.set(key, hit);
  }
  return [...kept.values()].slice(0, limit);
}

/** The query's vectors, computed once, from the first `start()` on (a user with nothing stored costs no encoder time). */
function queryEncoding(service: ServiceContext, request: SearchRequest): { start(): Promise<Float32Array[]> } {
  const texts = queryTexts(request);
  let vectors: Promise<Float32Array[]> | null = null;
  return {
    start: () => {
      if (!vectors) {
        vectors = service.embed(texts.map((text) => (text.trim() === '' ? '?' : text)), 'query', request.userId);
        vectors.catch(() => undefined);
      }
      return vectors;
    },
  };
}

/** One user's search as far as it goes without the query's vectors, and its span. */
interface PreparedUser {
  request: SearchRequest;
  search: PreparedSearch;
  /**
   * One span for the scoring, from the vector-free half to the answer (the wait for the encoder
   * between them is the encode span's): a leaf, so it is never made current, and one span rather
   * than two, since a traced cached Search pays per span (bench/tracing-cost.ts).
   */
  span: Span;
  started: number;
  preparedAt: number;
}

function prepareUser(service: ServiceContext, request: SearchRequest, state: UserState, overrides: SearchOverrides): PreparedUser {
  const span = startSpan('memorypool.retrieval', { 'memorypool.retrieval.units': state.records.size });
  const started = span.recording ? performance.now() : 0;
  const plan = planQuery(request, queryTexts(request), state.corpus, service.weights, overrides);
  const search = state.corpus.prepare({ ...plan.query, filter: recordFilter(service, state, request.filter) }, plan.weights);
  return { request, search, span, started, preparedAt: span.recording ? performance.now() : 0 };
}

/** The query's vectors; a failure to compute them ends the prepared searches' spans as failed. */
async function vectorsFor(vectors: Promise<Float32Array[]>, prepared: readonly PreparedUser[]): Promise<Float32Array[]> {
  try {
    return await vectors;
  } catch (error) {
    for (const { span } of prepared) {
      span.fail(error);
      span.end();
    }
    throw error;
  }
}

/** One user's best `limit` hits for the prepared request, its vectors given. */
function rankUser(prepared: PreparedUser, state: UserState, vectors: Float32Array[], limit: number): SearchHit[] {
  const { span } = prepared;
  const rankedAt = span.recording ? performance.now() : 0;
  const seen = span.recording ? { candidates: 0 } : undefined;
  // A write that lands while the vectors are computed is seen: `rank` redoes what it changed.
  const ranked = state.corpus.rank(prepared.search, vectors, limit, seen);
  const hits: SearchHit[] = [];
  for (const { seq, score, explanation, duplicates } of ranked) {
    const record = state.bySeq.get(seq);
    if (!record) continue;
    const hit: SearchHit = { memory: publicMemory(record), content: hitContent(record), score: roundScore(score) };
    if (explanation) hit.explanation = explanation;
    if (duplicates !== undefined) hit.duplicates = duplicates;
    hits.push(hit);
  }
  if (span.recording) {
    span.setAttributes({
      'memorypool.retrieval.exhaustive': prepared.search.scored !== null,
      'memorypool.retrieval.candidates': seen?.candidates,
      'memorypool.retrieval.prepare_ms': prepared.preparedAt - prepared.started,
      'memorypool.retrieval.rank_ms': performance.now() - rankedAt,
      'memorypool.search.hits': hits.length,
    });
    span.end();
  }
  return hits;
}

/** Newest first: the first page (see list-pages.ts). */
export async function listMemories(service: ServiceContext, request: ListRequest): Promise<Memory[]> {
  return (await listPage(service, request)).memories;
}

export async function getMemory(service: ServiceContext, userId: string, id: string): Promise<Memory> {
  return publicMemory(await visibleRecord(service, userId, id));
}

/** The user's memory of this id unless it has expired (then, as for any other door, it is not there). */
export async function visibleRecord(service: ServiceContext, userId: string, id: string): Promise<StoredRecord> {
  const record = (await service.existingUser(userId))?.records.get(id);
  if (!record || !service.visible(record, service.now())) throw notFound(id);
  return record;
}

/** Every version of a memory, oldest first, the current one last. */
export async function memoryHistory(service: ServiceContext, userId: string, id: string): Promise<{ id: string; versions: MemoryVersion[] }> {
  const record = await visibleRecord(service, userId, id);
  const current = versionOf(record);
  const earlier = current.version > 1 ? await service.store.history(userId, id) : [];
  return { id, versions: [...earlier.filter((entry) => entry.version < current.version), current] };
}

export function notFound(id: string): AppError {
  return createError('NOT_FOUND', `No memory with id ${JSON.stringify(id)}`);
}

/** The request's filter as the corpus applies it (on its units, whose time is parsed already), or none. */
function recordFilter(service: ServiceContext, state: UserState, filter: MemoryFilter | undefined): ((unit: CorpusUnit) => boolean) | undefined {
  const nowMs = service.now();
  const unfiltered = !filter || Object.values(filter).every((condition) => condition === undefined);
  // Expiry only costs a search when the user holds a memory that expires at all.
  if (unfiltered && !state.expiring) return undefined;
  const matches = unfiltered ? null : filterTest(filter);
  const window = unfiltered ? null : timeWindowOnly(filter);
  const mentions = entityCondition(state, filter);
  return (unit) => {
    if (mentions && !mentions(unit.seq)) return false;
    // A time window alone needs only the unit's time, unless a memory may have expired.
    if (window !== null && state.expiring === 0) return window(unit.timeMs);
    const record = state.bySeq.get(unit.seq);
    // Without an expiring memory every record is visible: no test of its expiry per unit.
    return record !== undefined && (state.expiring === 0 || service.visible(record, nowMs)) && (matches === null || matches(record, unit.timeMs));
  };
}

function roundScore(score: number): number {
  return Math.round(score * 1e6) / 1e6;
}
