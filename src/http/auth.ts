import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { createError } from '../errors.js';
import { assertPrefixesCover } from '../protocol/user-scope.js';

/** A credential and the users it may act for (`null`: every user). */
export interface TokenGrant {
  digest: Buffer;
  userPrefixes: readonly string[] | null;
}

const tokensFileSchema = z.array(
  z.object({
    token: z.string().min(8),
    user_prefixes: z.array(z.string()).optional(),
  }),
);

/**
 * Checks credentials in the three forms the evaluation platform sends (`Authorization: Bearer`,
 * `Authorization: Token`, `X-Api-Key`). Tokens are compared as SHA-256 digests with
 * `timingSafeEqual`, against every grant without an early exit, so timing reveals nothing.
 * With no token configured the service runs open.
 */
export class Authenticator {
  private readonly grants: TokenGrant[];

  constructor(grants: TokenGrant[]) {
    this.grants = grants;
  }

  static fromConfig(config: { token?: string; tokensFile?: string }): Authenticator {
    const grants: TokenGrant[] = [];
    if (config.token) grants.push({ digest: digest(config.token), userPrefixes: null });
    if (config.tokensFile) {
      for (const entry of readTokensFile(config.tokensFile)) grants.push({ digest: digest(entry.token), userPrefixes: entry.user_prefixes ?? null });
    }
    return new Authenticator(grants);
  }

  get open(): boolean {
    return this.grants.length === 0;
  }

  /** The grant the request's credential matches; throws UNAUTHORIZED when it matches none. */
  authenticate(headers: Record<string, string | string[] | undefined>): TokenGrant | null {
    if (this.open) return null;
    const presented = credentialFrom(headers);
    if (presented === null) throw createError('UNAUTHORIZED', 'Missing credentials: send Authorization: Bearer <token>');
    const presentedDigest = digest(presented);
    let matched: TokenGrant | null = null;
    for (const grant of this.grants) {
      if (timingSafeEqual(grant.digest, presentedDigest) && matched === null) matched = grant;
    }
    if (matched === null) throw createError('UNAUTHORIZED', 'Invalid credentials');
    return matched;
  }
}

/** Throws FORBIDDEN when the grant's scope does not cover the user. */
export function assertUserAllowed(grant: TokenGrant | null, userId: string): void {
  assertPrefixesCover(grant?.userPrefixes ?? null, userId);
}

/**
 * The tokens file's entries. Its errors name the file and the place, never the text: V8 quotes
 * the JSON around a syntax error ("Unexpected token 's', ..."{"token": super-secr"..."), and the
 * message ends up in the startup error on stderr.
 */
function readTokensFile(file: string): z.infer<typeof tokensFileSchema> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    const position = /position (\d+)/.exec(error.message)?.[1];
    throw new Error(`Tokens file ${file} is not valid JSON${position === undefined ? '' : ` (at position ${position})`}`);
  }
  const result = tokensFileSchema.safeParse(parsed);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join('.') || '(top level)'}: ${issue.message}`);
    throw new Error(`Tokens file ${file} is invalid: ${problems.join('; ')}`);
  }
  return result.data;
}

function credentialFrom(headers: Record<string, string | string[] | undefined>): string | null {
  const authorization = single(headers.authorization);
  if (authorization !== undefined) {
    const match = /^\s*(bearer|token)\s+(\S.*?)\s*$/i.exec(authorization);
    if (match) return match[2];
  }
  const apiKey = single(headers['x-api-key'])?.trim();
  return apiKey ? apiKey : null;
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}
