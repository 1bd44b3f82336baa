/**
 * The most of a query (and of each `options` text) a Search reads. The encoder reads at most
 * 128 tokens anyway; the analyser, the tag, speaker and time cues would otherwise walk the whole
 * text, so a 7 MB query cost seconds of the event loop every other request waits behind. 4,000
 * characters (~650 words) is far longer than any question, and what lies past it is ignored
 * rather than refused: a long query is not an error, only one that cannot buy more work.
 */
export const MAX_QUERY_CHARS = 4_000;

/** The first `MAX_QUERY_CHARS` of a text, cut at a space when one is near so no word is split. */
export function boundQueryText(text: string, maxChars = MAX_QUERY_CHARS): string {
  if (text.length <= maxChars) return text;
  let end = maxChars;
  // Never leave half of a surrogate pair at the end.
  if (/[\uD800-\uDBFF]/.test(text[end - 1])) end--;
  const space = text.lastIndexOf(' ', end);
  if (space > end - 64 && space > 0) end = space;
  return text.slice(0, end);
}

/** The request with its query and each option bounded (the caller's object is left as it was). */
export function boundSearchRequest<T extends { query: string; options?: readonly string[] }>(request: T): T {
  const options = request.options?.map((option) => boundQueryText(option));
  return { ...request, query: boundQueryText(request.query), ...(options === undefined ? {} : { options }) } as T;
}
