import type { ListPage, ListPageParams, Memory } from './types.js';

/** The page size of a walk that names none: the most one page may hold. */
const WALK_PAGE = 1000;

/**
 * Every memory of the pages, in order, fetching the next page only once the last one is read:
 * the walk both clients' `listAll` take (each fetches a page its own way).
 */
export async function* walkPages(params: Omit<ListPageParams, 'cursor'>, fetchPage: (params: ListPageParams) => Promise<ListPage>): AsyncGenerator<Memory> {
  let cursor: string | undefined;
  do {
    const page = await fetchPage({ limit: WALK_PAGE, ...params, ...(cursor !== undefined ? { cursor } : {}) });
    yield* page.memories;
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
}
