import type { FastifyReply, FastifyRequest } from 'fastify';
import type { UserCheck } from '../protocol/operations.js';
import { userCheckOf } from '../protocol/user-scope.js';
import { assertUserAllowed, type Authenticator, type TokenGrant } from './auth.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The credential's grant; null when the service runs open. Set by the auth hook. */
    grant: TokenGrant | null;
  }
}

/** Routes that answer without credentials, plus the app's `alsoPublic` (pages that hold no data, opted-in metrics). */
const PUBLIC_ROUTES = ['/health'];

export function authHook(authenticator: Authenticator, alsoPublic: readonly string[] = []) {
  const open = new Set([...PUBLIC_ROUTES, ...alsoPublic]);
  // The callback form, as app.ts's hooks: no promise per request. A refused token throws, and
  // fastify answers a hook's throw as it does a done(error).
  return (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void => {
    if (!open.has(request.routeOptions.url ?? '')) request.grant = authenticator.authenticate(request.headers);
    done();
  };
}

/** Every route that touches a user's data calls this with the user it resolved. */
export function authorizeUser(request: FastifyRequest, userId: string): void {
  assertUserAllowed(request.grant, userId);
}

/** `authorizeUser` for the request as an operation's user check, its scope attached as data (operations.ts, `UserCheck`). */
export function userCheck(request: FastifyRequest): UserCheck {
  return userCheckOf(request.grant?.userPrefixes ?? null);
}
