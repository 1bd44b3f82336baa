/** `memorypool-client` (also `memorypool/client`): the HTTP client, its errors and types. No dependencies: `fetch` only. */
export { MemoryPoolClient, DEFAULT_URL, type ClientOptions } from './memorypool-client.js';
export {
  MemoryPoolError,
  BadRequestError,
  AuthenticationError,
  PermissionDeniedError,
  NotFoundError,
  ConflictError,
  UnprocessableEntityError,
  RateLimitError,
  InternalServerError,
  APIConnectionError,
  APITimeoutError,
  APIUserAbortError,
  type ValidationIssue,
} from './errors.js';
export type * from './types.js';
