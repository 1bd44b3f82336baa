import { writeFileSync } from 'node:fs';

/**
 * Names the calling thread for the operating system (Linux: its `comm`, at most 15 bytes), so that
 * `top -H`, /proc and the bench tell the service threads and the encoder's apart from Node's
 * own (which are all `node`). Elsewhere, or where /proc is not writable, nothing happens.
 */
export function nameThisThread(name: string): void {
  try {
    writeFileSync('/proc/thread-self/comm', name.slice(0, 15));
  } catch {
    // Not Linux, or no /proc: the name is only a convenience.
  }
}
