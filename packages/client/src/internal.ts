/**
 * `memorypool-client/internal`: what memorypool's in-process pool shares with the HTTP client so
 * the two answer, page and fail alike (the error built from a status and body, the query string
 * of recall and list, the page walk, the change feed's follow). Not part of the client's documented surface.
 */
export { errorFromAnswer } from './errors.js';
export { memoryQuery } from './query.js';
export { walkPages } from './pages.js';
export { followPages } from './changes.js';
