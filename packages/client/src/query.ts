import type { ListParams, RecallParams } from './types.js';

/**
 * The query string of `GET /mem/search` and `GET /mem/list`, as strings: the HTTP client sends it
 * and the in-process pool parses exactly this object with the routes' schemas, so both read a
 * filter alike. The metadata `filter` becomes `meta.<key>=<value>`.
 */
export function memoryQuery(params: RecallParams | ListParams): Record<string, string> {
  const { filter, ...rest } = params as RecallParams;
  const query: Record<string, string> = {};
  for (const [key, value] of Object.entries(rest)) if (value !== undefined && value !== null) query[key] = String(value);
  for (const [key, value] of Object.entries(filter ?? {})) query[`meta.${key}`] = String(value);
  return query;
}
