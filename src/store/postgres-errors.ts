import { createError, isAppError, type AppError } from '../errors.js';

/** SQLSTATE classes of a database that is down, restarting or out of resources: worth a retry. */
const RETRYABLE_SQLSTATE = /^(08|53|57|40)/;

/**
 * Whether the failure is the database being out of reach rather than a statement it refused:
 * an error the server answered carries a SQLSTATE; one without it (refused, reset, timed out,
 * terminated connection) never reached a verdict.
 */
export function isConnectionError(error: Error): boolean {
  if (error instanceof TypeError || error instanceof RangeError || error instanceof SyntaxError) return false;
  const code = (error as { code?: unknown }).code;
  const sqlstate = typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : null;
  return sqlstate === null || RETRYABLE_SQLSTATE.test(sqlstate);
}

export function databaseError(error: unknown): AppError {
  if (isAppError(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof Error && isConnectionError(error)) {
    return createError('STORAGE_UNAVAILABLE', `Storage is unavailable: PostgreSQL: ${message}`, { cause: error });
  }
  return createError('INTERNAL', `PostgreSQL: ${message}`, { cause: error });
}

/** The URL for logs: the password never appears. */
export function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return 'postgres://(unparsable url)';
  }
}
