/**
 * How much work one platform request may ask for. Each bound is far above what the evaluation
 * platform sends (its Adds carry at most 20 messages or 2,000 words unless one message is longer;
 * the longest message in LongMemEval-S is 41,855 characters, in LoCoMo 440) and far below what
 * would keep the encoder busy for seconds: every stored unit and every query text costs one
 * encoder pass. A request past a bound is a 422 naming the field, before any work is done.
 * docs/http-api.md ("Limits, slow clients, overload, rate limits and HTTPS") documents them; the query's own length bound is the service's
 * (src/memory/query-bounds.ts), since every door searches through it.
 */

/**
 * Bytes in a platform Search's body (or MEMORYPOOL_BODY_LIMIT when smaller): a 413 past it, decided
 * from the Content-Length before the body is read. A Search reads at most 33 texts of 4,000
 * characters, so a body of megabytes only costs receiving, decoding and parsing it: ~70 ms of the
 * event loop for 7 MB, and back to back that doubled other clients' p95 (bench/hostile-load.ts).
 */
export const MAX_SEARCH_BODY_BYTES = 2 * 1024 * 1024;

/** Extra query texts in a Search's `options` (each is encoded, analysed and scored like the query). */
export const MAX_SEARCH_OPTIONS = 32;

/** Characters in one Add message's `content` (~33,000 words, stored as units of at most 70 words). */
export const MAX_MESSAGE_CHARS = 200_000;

/** Messages in one Add. */
export const MAX_ADD_MESSAGES = 1_000;

/** Characters of `content` over all of an Add's messages. */
export const MAX_ADD_CHARS = 400_000;
