import { createHash } from 'node:crypto';
import type { Memory, MemoryFilter } from '../domain/memory.js';
import { createError } from '../errors.js';
import { matchesFilter, publicMemory } from './memory-records.js';
import type { ServiceContext } from './service-context.js';
import type { ListRequest } from './types.js';
import type { UserState } from './user-state.js';

/**
 * Listing a page at a time, newest first (an update counts as new), through opaque cursors.
 *
 * A cursor names the seq of the last memory a page gave (the store assigns seqs, per user, never
 * reused, the same on every process and replica and after a restart), and a digest of the user
 * and the filter it was made for: the next page is the matching memories of lower seq. A walk
 * while others write therefore returns every memory that existed throughout exactly once: an
 * add takes a seq above any cursor (it is not in the walk), a delete only removes. An update
 * moves the memory to a new seq (to the front), so a memory updated during a walk is met where
 * its new version stands: before the walk reached it, never; after, once.
 */

export interface ListPage {
  memories: Memory[];
  /** What continues after this page; null when nothing more matches. */
  nextCursor: string | null;
}

const CURSOR_VERSION = 1;

export async function listPage(service: ServiceContext, request: ListRequest & { cursor?: string }): Promise<ListPage> {
  const digest = cursorDigest(request.userId, request.filter);
  const afterSeq = request.cursor === undefined ? Infinity : readCursor(request.cursor, digest);
  const state = await service.existingUser(request.userId);
  if (!state) return { memories: [], nextCursor: null };
  const seqs = newestFirst(state);
  const nowMs = service.now();
  const memories: Memory[] = [];
  let lastSeq = -1;
  for (let i = firstBelow(seqs, afterSeq); i < seqs.length; i++) {
    const record = state.bySeq.get(seqs[i]);
    if (!record || !service.visible(record, nowMs) || (request.filter && !matchesFilter(record, request.filter))) continue;
    // One match past a full page: only then is there a next page to name.
    if (memories.length === request.limit) return { memories, nextCursor: writeCursor(lastSeq, digest) };
    memories.push(publicMemory(record));
    lastSeq = record.seq;
  }
  return { memories, nextCursor: null };
}

/** The user's seqs, highest first, sorted once per change of the user (seqs only grow, so nextSeq and the count tell a change). */
const sortedSeqs = new WeakMap<UserState, { nextSeq: number; size: number; seqs: number[] }>();

function newestFirst(state: UserState): number[] {
  const known = sortedSeqs.get(state);
  if (known && known.nextSeq === state.nextSeq && known.size === state.bySeq.size) return known.seqs;
  const seqs = [...state.bySeq.keys()].sort((a, b) => b - a);
  sortedSeqs.set(state, { nextSeq: state.nextSeq, size: state.bySeq.size, seqs });
  return seqs;
}

/** The first index whose seq is below `seq` in a list sorted highest first. */
function firstBelow(seqs: readonly number[], seq: number): number {
  let low = 0;
  let high = seqs.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if (seqs[mid] >= seq) low = mid + 1;
    else high = mid;
  }
  return low;
}

function cursorDigest(userId: string, filter: MemoryFilter | undefined): string {
  return createHash('sha256').update(JSON.stringify([userId, canonical(filter ?? {})])).digest('base64url').slice(0, 16);
}

/** A value with every object's keys sorted, so that the same filter given in another order is the same filter. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (typeof value !== 'object' || value === null) return value;
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, canonical((value as Record<string, unknown>)[key])]));
}

function writeCursor(seq: number, digest: string): string {
  return Buffer.from(JSON.stringify({ v: CURSOR_VERSION, s: seq, f: digest })).toString('base64url');
}

function readCursor(cursor: string, digest: string): number {
  let parsed: { v?: unknown; s?: unknown; f?: unknown } | null = null;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  if (!parsed || parsed.v !== CURSOR_VERSION || typeof parsed.s !== 'number' || !Number.isInteger(parsed.s) || parsed.s < 0) {
    throw createError('INVALID_PARAMETER', 'cursor: not a cursor this service gave');
  }
  if (parsed.f !== digest) throw createError('INVALID_PARAMETER', 'cursor: made for another user or filter; send the same filters as the page it came with');
  return parsed.s;
}
