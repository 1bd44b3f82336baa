import { createHash } from 'node:crypto';
import type { Memory, MemoryFilter } from '../domain/memory.js';
import { createError } from '../errors.js';
import { entityCondition } from './entity-reads.js';
import { matchesFilter } from './filter-match.js';
import { memoryTime, publicMemory } from './memory-records.js';
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
  const page = await userPage(service, request.userId, request.filter, afterSeq, request.limit);
  return { memories: page.memories.map(({ memory }) => memory), nextCursor: page.more ? writeCursor(page.memories.at(-1)!.seq, digest) : null };
}

/**
 * A page over several users: each user's list in its own order (newest first by its seqs, as
 * above), merged newest first by when each memory was last written (`updated_at`), ties in the
 * order the users were named. The cursor holds each user's position (the seq of the last memory
 * of that user a page gave), so each user's walk keeps the single-user guarantee: every memory
 * that existed throughout, exactly once.
 */
export async function listUsersPage(service: ServiceContext, userIds: readonly string[], request: Omit<ListRequest, 'userId'> & { cursor?: string }): Promise<ListPage> {
  const digest = cursorDigest(userIds, request.filter);
  const after = request.cursor === undefined ? userIds.map(() => Infinity) : readUsersCursor(request.cursor, digest, userIds.length);
  // Each user's next `limit` matches: the page takes at most that many from any one of them.
  const pages = await Promise.all(userIds.map((userId, i) => userPage(service, userId, request.filter, after[i], request.limit)));
  const heads = pages.map(() => 0);
  const memories: Memory[] = [];
  // A user none of whose memories a page gave yet is bounded by its next seq now, so that what
  // is added to it during the walk stays out of the walk, as for one user.
  const positions = after.map((seq, i) => Math.min(seq, pages[i].ceiling));
  while (memories.length < request.limit) {
    let pick = -1;
    for (let i = 0; i < pages.length; i++) {
      const candidate = pages[i].memories[heads[i]];
      if (candidate && (pick < 0 || memoryTime(candidate.memory) > memoryTime(pages[pick].memories[heads[pick]].memory))) pick = i;
    }
    if (pick < 0) break;
    const { memory, seq } = pages[pick].memories[heads[pick]++];
    memories.push(memory);
    positions[pick] = seq;
  }
  const more = pages.some((page, i) => heads[i] < page.memories.length || page.more);
  return { memories, nextCursor: more ? writeUsersCursor(positions, digest) : null };
}

/** Up to `limit` of the user's matching memories below `afterSeq`, newest first, whether more match, and the seq every later add will be at or above. */
async function userPage(
  service: ServiceContext,
  userId: string,
  filter: MemoryFilter | undefined,
  afterSeq: number,
  limit: number,
): Promise<{ memories: Array<{ memory: Memory; seq: number }>; more: boolean; ceiling: number }> {
  const state = await service.existingUser(userId);
  if (!state) return { memories: [], more: false, ceiling: 0 };
  const ceiling = state.nextSeq;
  const seqs = newestFirst(state);
  const nowMs = service.now();
  const mentions = entityCondition(state, filter);
  const memories: Array<{ memory: Memory; seq: number }> = [];
  for (let i = firstBelow(seqs, afterSeq); i < seqs.length; i++) {
    const record = state.bySeq.get(seqs[i]);
    if (!record || !service.visible(record, nowMs) || (mentions && !mentions(record.seq)) || (filter && !matchesFilter(record, filter))) continue;
    // One match past a full page: only then is there a next page to name.
    if (memories.length === limit) return { memories, more: true, ceiling };
    memories.push({ memory: publicMemory(record), seq: record.seq });
  }
  return { memories, more: false, ceiling };
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

function cursorDigest(userId: string | readonly string[], filter: MemoryFilter | undefined): string {
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
  const parsed = parseCursor(cursor, digest);
  if (!isPosition(parsed.s)) throw notOurs();
  return parsed.s;
}

/** A multi-user cursor: each user's position, in the order the users were named (null: none of theirs given yet). */
function writeUsersCursor(positions: readonly number[], digest: string): string {
  return Buffer.from(JSON.stringify({ v: CURSOR_VERSION, p: positions.map((seq) => (seq === Infinity ? null : seq)), f: digest })).toString('base64url');
}

function readUsersCursor(cursor: string, digest: string, users: number): number[] {
  const parsed = parseCursor(cursor, digest);
  if (!Array.isArray(parsed.p) || parsed.p.length !== users || !parsed.p.every((seq) => seq === null || isPosition(seq))) throw notOurs();
  return parsed.p.map((seq: number | null) => seq ?? Infinity);
}

function parseCursor(cursor: string, digest: string): { v?: unknown; s?: unknown; p?: unknown[]; f?: unknown } {
  let parsed: { v?: unknown; s?: unknown; p?: unknown[]; f?: unknown } | null = null;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  if (!parsed || typeof parsed !== 'object' || parsed.v !== CURSOR_VERSION) throw notOurs();
  if (parsed.f !== digest) throw createError('INVALID_PARAMETER', 'cursor: made for another user or filter; send the same filters as the page it came with');
  return parsed;
}

function isPosition(seq: unknown): seq is number {
  return typeof seq === 'number' && Number.isInteger(seq) && seq >= 0;
}

function notOurs(): Error {
  return createError('INVALID_PARAMETER', 'cursor: not a cursor this service gave');
}
