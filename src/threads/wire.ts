import { AppError, errors, isAppError, type ErrorCode } from '../errors.js';
import type { TraceCarrier } from '../telemetry/tracing.js';

/**
 * What crosses between a server's main thread and its service threads (service-threads.ts,
 * service-thread.ts): calls, their answers, the errors as data, and which thread owns a user.
 */

/** A call of one service method on a thread. */
export interface ThreadCall {
  id: number;
  method: string;
  args: unknown[];
  /** The caller's trace and request id, continued by the thread's spans and log lines. */
  trace: TraceCarrier | null;
}

export type ThreadReply = { id: number; result: unknown } | { id: number; error: WireError };

/** What a thread says once, when its service is open (or could not be). */
export type ThreadStarted = { started: true; dataDir: string } | { started: false; error: string };

/** An error as structured clone carries it: an AppError keeps its code, detail, issues and body. */
export interface WireError {
  code?: ErrorCode;
  message: string;
  issues?: AppError['issues'];
  body?: Record<string, unknown>;
}

export function toWire(error: unknown): WireError {
  if (isAppError(error)) return { code: error.code, message: error.message, issues: error.issues, body: error.body };
  return { message: error instanceof Error ? error.message : String(error) };
}

export function fromWire(wire: WireError): Error {
  if (wire.code !== undefined && wire.code in errors) return new AppError(wire.code, wire.message, { issues: wire.issues, body: wire.body });
  return new Error(wire.message);
}

/**
 * The thread (0 to `threads` - 1) that owns a user: FNV-1a of the id's UTF-16 units. Stable
 * across starts, so a user's index files are read by the same thread each time; spread evenly
 * whatever the ids look like (sequential `user-00001` ones included).
 */
export function threadOf(userId: string, threads: number): number {
  if (threads <= 1) return 0;
  let hash = 0x811c9dc5;
  for (let i = 0; i < userId.length; i++) {
    hash ^= userId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % threads;
}
