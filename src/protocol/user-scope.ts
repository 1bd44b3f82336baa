import { createError } from '../errors.js';
import type { UserCheck } from './operations.js';

/**
 * A token's scope over users as data: the user-id prefixes it covers, null for every user. The
 * HTTP layer's token check (src/http/auth.ts) and a service thread rebuilding a caller's check
 * (src/threads/) both refuse with this one error.
 */

export function prefixesCover(prefixes: readonly string[] | null, userId: string): boolean {
  return prefixes === null || prefixes.some((prefix) => userId.startsWith(prefix));
}

export function assertPrefixesCover(prefixes: readonly string[] | null, userId: string): void {
  if (!prefixesCover(prefixes, userId)) throw createError('FORBIDDEN', `These credentials do not cover user ${JSON.stringify(userId)}`);
}

/** The user check of a scope, its prefixes attached (operations.ts, `UserCheck`). */
export function userCheckOf(prefixes: readonly string[] | null): UserCheck {
  return Object.assign((userId: string) => assertPrefixesCover(prefixes, userId), { prefixes });
}
