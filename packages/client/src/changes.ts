import type { ChangeEvent, ChangesPage, ChangesParams, FollowChangesParams } from './types.js';

/** How long each request of a follow is held when the caller names no `wait` (seconds; within the client's 60 s timeout). */
const FOLLOW_WAIT = 30;

/**
 * Every event from the cursor on, for as long as the caller reads: each request long-polls, and
 * the next starts after the last page's `next_cursor`, so a follower that stops and starts again
 * from the last `seq` it handled misses nothing. Both clients' `followChanges` (each fetches a
 * page its own way). Ends when `signal` aborts.
 */
export async function* followPages(params: FollowChangesParams, fetchPage: (params: ChangesParams) => Promise<ChangesPage>, signal?: AbortSignal): AsyncGenerator<ChangeEvent> {
  let after = String(params.after ?? 0);
  while (!signal?.aborted) {
    const page = await fetchPage({ ...params, after, wait: params.wait ?? FOLLOW_WAIT });
    yield* page.events;
    after = page.next_cursor;
  }
}
