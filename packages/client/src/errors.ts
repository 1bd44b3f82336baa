/**
 * The errors every client raises (the HTTP client and the in-process pool alike): one base class,
 * a subclass per status as the OpenAI SDKs have them, and two for calls that got no answer.
 * `reason` is the server's `detail.reason` (for a 422, its problems joined); `issues` the 422's
 * problem list. Built from the status and the body only: never from matching message text.
 */

/** One problem of a 422, as the platform's contract lists them. */
export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class MemoryPoolError extends Error {
  /** The HTTP status; undefined when no answer came (connection failure, timeout, abort). */
  readonly status: number | undefined;
  readonly reason: string;
  /** The problems of a 422 (empty for every other error). */
  readonly issues: ValidationIssue[];
  /** The service's error code when it names one (`detail.code`: the in-process pool and the CLI do), e.g. `NOT_FOUND`. */
  readonly code: string | undefined;
  /** The parsed error body, when there was one. */
  readonly body: unknown;
  readonly headers: Record<string, string>;

  constructor(
    reason: string,
    fields: { status?: number; issues?: ValidationIssue[]; code?: string; body?: unknown; headers?: Record<string, string>; cause?: unknown } = {},
  ) {
    super(fields.status === undefined ? reason : `${fields.status} ${reason}`, { cause: fields.cause });
    this.name = new.target.name;
    this.status = fields.status;
    this.reason = reason;
    this.issues = fields.issues ?? [];
    this.code = fields.code;
    this.body = fields.body;
    this.headers = fields.headers ?? {};
  }
}

export class BadRequestError extends MemoryPoolError {}
export class AuthenticationError extends MemoryPoolError {}
export class PermissionDeniedError extends MemoryPoolError {}
export class NotFoundError extends MemoryPoolError {}
export class ConflictError extends MemoryPoolError {}
export class UnprocessableEntityError extends MemoryPoolError {}
export class RateLimitError extends MemoryPoolError {}
/** 5xx: the service could not do it now (503: not durable, overloaded, storage down; retry later). */
export class InternalServerError extends MemoryPoolError {}
/** No answer: refused, reset or dropped connection. */
export class APIConnectionError extends MemoryPoolError {}
/** No answer within `timeoutMs`. */
export class APITimeoutError extends APIConnectionError {}
/** The caller's `signal` aborted the call. */
export class APIUserAbortError extends MemoryPoolError {}

const BY_STATUS: Record<number, typeof MemoryPoolError> = {
  400: BadRequestError,
  401: AuthenticationError,
  403: PermissionDeniedError,
  404: NotFoundError,
  409: ConflictError,
  422: UnprocessableEntityError,
  429: RateLimitError,
};

/** The error for an answer with this status and body (`{detail: {reason}}`, or a 422's `{detail: [issues]}`). */
export function errorFromAnswer(status: number, body: unknown, headers: Record<string, string> = {}): MemoryPoolError {
  const detail = (body as { detail?: unknown } | null | undefined)?.detail;
  const issues = Array.isArray(detail) ? (detail as ValidationIssue[]) : [];
  const reason =
    issues.length > 0
      ? issues.map((issue) => `${(issue.loc ?? []).join('.')}: ${issue.msg}`).join('; ')
      : typeof (detail as { reason?: unknown } | undefined)?.reason === 'string'
        ? (detail as { reason: string }).reason
        : typeof detail === 'string'
          ? detail
          : `HTTP ${status}`;
  const rawCode = (detail as { code?: unknown } | undefined)?.code;
  const ErrorClass = BY_STATUS[status] ?? (status >= 500 ? InternalServerError : MemoryPoolError);
  return new ErrorClass(reason, { status, issues, code: typeof rawCode === 'string' ? rawCode : undefined, body, headers });
}
