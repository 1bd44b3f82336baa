import type { Memory, MemoryFilter, MemoryVersion } from '../domain/memory.js';
import { createError } from '../errors.js';
import type { CorpusUnit } from '../retrieval/corpus/corpus-types.js';
import { versionOf, type StoredRecord } from '../store/stored-record.js';
import { listPage } from './list-pages.js';
import { hitContent, matchesFilter, publicMemory } from './memory-records.js';
import { boundSearchRequest } from './query-bounds.js';
import { startSpan } from '../telemetry/tracing.js';
import { planQuery, queryTexts, type SearchOverrides } from './query-plan.js';
import type { ServiceContext } from './service-context.js';
import type { ListRequest, SearchHit, SearchRequest } from './types.js';
import type { UserState } from './user-state.js';

/** The service's reads: search, list, get and history, each of one user as stored now. */

export async function searchMemories(service: ServiceContext, unbounded: SearchRequest, overrides: SearchOverrides = {}): Promise<SearchHit[]> {
  const request = boundSearchRequest(unbounded);
  const texts = queryTexts(request);
  const encode = () => {
    const vectors = service.embed(texts.map((text) => (text.trim() === '' ? '?' : text)), 'query', request.userId);
    vectors.catch(() => undefined);
    return vectors;
  };
  // The encoder works while this thread does the rest. For a user held here with memories it
  // starts even before the freshness check (with PostgreSQL, a round trip); any other user is
  // checked first, so that searching an unknown user costs no encoder time.
  let encoding = (service.cache.peek(request.userId)?.records.size ?? 0) > 0 ? encode() : null;
  const state = await service.existingUser(request.userId);
  if (!state || state.records.size === 0) return [];
  encoding ??= encode();
  const plan = planQuery(request, texts, state.corpus, service.weights, overrides);
  // One span for the scoring, from the vector-free half to the answer (the wait for the encoder
  // between them is the encode span's): a leaf, so it is never made current, and one span
  // rather than two, since a traced cached Search pays per span (bench/tracing-cost.ts).
  const span = startSpan('memorypool.retrieval', { 'memorypool.retrieval.units': state.records.size });
  const started = span.recording ? performance.now() : 0;
  const prepared = state.corpus.prepare({ ...plan.query, filter: recordFilter(service, state, request.filter) }, plan.weights);
  const preparedAt = span.recording ? performance.now() : 0;
  let vectors: Float32Array[];
  try {
    vectors = await encoding;
  } catch (error) {
    span.fail(error);
    span.end();
    throw error;
  }
  const rankedAt = span.recording ? performance.now() : 0;
  const seen = span.recording ? { candidates: 0 } : undefined;
  // A write that lands while the vectors are computed is seen: `rank` redoes what it changed.
  const ranked = state.corpus.rank(prepared, vectors, request.limit, seen);
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
      'memorypool.retrieval.exhaustive': prepared.scored !== null,
      'memorypool.retrieval.candidates': seen?.candidates,
      'memorypool.retrieval.prepare_ms': preparedAt - started,
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

export function notFound(id: string): Error {
  return createError('NOT_FOUND', `No memory with id ${JSON.stringify(id)}`);
}

/** The request's filter as the corpus applies it (on its units, whose time is parsed already), or none. */
function recordFilter(service: ServiceContext, state: UserState, filter: MemoryFilter | undefined): ((unit: CorpusUnit) => boolean) | undefined {
  const nowMs = service.now();
  const unfiltered = !filter || Object.values(filter).every((condition) => condition === undefined);
  // Expiry only costs a search when the user holds a memory that expires at all.
  if (unfiltered && !state.expiring) return undefined;
  return (unit) => {
    const record = state.bySeq.get(unit.seq);
    return record !== undefined && service.visible(record, nowMs) && (unfiltered || matchesFilter(record, filter, unit.timeMs));
  };
}

function roundScore(score: number): number {
  return Math.round(score * 1e6) / 1e6;
}
