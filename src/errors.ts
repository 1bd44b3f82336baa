/**
 * Every error the service reports, in one table: a code, an HTTP status and a message.
 * Layers throw `createError(code, detail?)`; only the HTTP error handler turns codes into
 * statuses, and the CLI turns them into exit codes. Nothing branches on message text.
 */
export const errors = {
  BAD_REQUEST: { status: 400, message: 'Bad request' },
  MALFORMED_JSON: { status: 400, message: 'Request body is not valid JSON' },
  INVALID_PARAMETER: { status: 400, message: 'Invalid parameter' },
  UNKNOWN_ACTION: { status: 400, message: 'Unknown action' },
  VALIDATION_FAILED: { status: 422, message: 'Request validation failed' },
  UNAUTHORIZED: { status: 401, message: 'Missing or invalid credentials' },
  FORBIDDEN: { status: 403, message: 'Credentials do not cover this user' },
  NOT_FOUND: { status: 404, message: 'Not found' },
  CURSOR_EXPIRED: { status: 410, message: "The cursor is older than the change feed's retention" },
  ROUTE_NOT_FOUND: { status: 404, message: 'No such route' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed' },
  BODY_TOO_LARGE: { status: 413, message: 'Request body is too large' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'Unsupported content type' },
  RATE_LIMITED: { status: 429, message: 'Too many requests for this token' },
  NOT_READY: { status: 503, message: 'Service is starting' },
  SHUTTING_DOWN: { status: 503, message: 'Service is shutting down' },
  OVERLOADED: { status: 503, message: 'Service is overloaded: retry shortly' },
  STORAGE_UNAVAILABLE: { status: 503, message: 'Storage is unavailable' },
  EMBEDDER_UNAVAILABLE: { status: 503, message: 'Embedder is unavailable' },
  RERANKER_UNAVAILABLE: { status: 503, message: 'Reranker is unavailable' },
  INTERNAL: { status: 500, message: 'Internal error' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errors;

/** One problem in a request, in the evaluation platform's (FastAPI-style) shape. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly issues?: ValidationIssue[];
  /** Fields the answer's body carries beside `detail` (CURSOR_EXPIRED: `oldest_cursor`). */
  readonly body?: Record<string, unknown>;

  constructor(code: ErrorCode, detail?: string, options?: { issues?: ValidationIssue[]; cause?: unknown; body?: Record<string, unknown> }) {
    super(detail ?? errors[code].message, { cause: options?.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = errors[code].status;
    this.issues = options?.issues;
    this.body = options?.body;
  }
}

export function createError(code: ErrorCode, detail?: string, options?: { issues?: ValidationIssue[]; cause?: unknown; body?: Record<string, unknown> }): AppError {
  return new AppError(code, detail, options);
}

export function isAppError(error: unknown): error is AppError {
  return error instanceof AppError;
}

/** Whether a filesystem call (or the storage error made of it) failed for want of space. */
export function isDiskFull(error: unknown): boolean {
  const cause = isAppError(error) ? error.cause : error;
  return (cause as NodeJS.ErrnoException | undefined)?.code === 'ENOSPC';
}

/** Maps a failed filesystem call to the code a client can act on (retry later vs. give up). */
export function storageError(cause: unknown): AppError {
  // Already mapped by an inner call (a new user's folder written on its first append): its errno is in there.
  if (isAppError(cause)) return cause;
  const errno = (cause as NodeJS.ErrnoException | undefined)?.code;
  const detail = errno === 'ENOSPC' ? 'disk is full' : errno ? `write failed (${errno})` : 'write failed';
  return createError('STORAGE_UNAVAILABLE', `Storage is unavailable: ${detail}`, { cause });
}
