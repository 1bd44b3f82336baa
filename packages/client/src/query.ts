import type { ListParams, RecallParams } from './types.js';

/**
 * The query string of `GET /mem/search` and `GET /mem/list`, as strings: the HTTP client sends it
 * and the in-process pool parses exactly this object with the routes' schemas, so both read a
 * filter alike. The metadata `filter` becomes `meta.<key>=<value>`, several users a repeated `user_id`.
 */
export function memoryQuery(params: RecallParams | ListParams): Record<string, string | string[]> {
  const { filter, user_id: userId, user_ids: userIds, ...rest } = params as RecallParams;
  const query: Record<string, string | string[]> = {};
  for (const [key, value] of Object.entries(rest)) if (value !== undefined && value !== null) query[key] = String(value);
  // Several users: `user_id` repeated, as the routes read it.
  const users = [...(userId === undefined ? [] : [userId].flat()), ...(userIds ?? [])];
  if (users.length > 0) query.user_id = users.length === 1 ? users[0] : users;
  for (const [key, value] of Object.entries(filter ?? {})) query[`meta.${key}`] = String(value);
  return query;
}
