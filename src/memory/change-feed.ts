import type { Memory, MemoryVersion } from '../domain/memory.js';
import { createError } from '../errors.js';
import type { ChangeEvent, ChangeRead, ChangeType } from '../store/memory-store.js';
import type { StoredRecord } from '../store/stored-record.js';
import { publicMemory } from './memory-records.js';
import type { ServiceContext } from './service-context.js';

/** An event as the doors answer it: the stored event with the memory it names joined in. */
export interface FeedEvent {
  seq: number;
  type: ChangeType;
  at: string;
  user_id: string;
  memory_id: string | null;
  /**
   * The memory as that write left it (added, updated). Null for deletions, and for a memory
   * deleted (or expired) since: the feed keeps no text of its own (see `ChangeEvent`).
   */
  memory: Memory | null;
}

export interface ChangesRequest {
  /** The cursor: the seq of the last event seen (0: from the oldest held). */
  after: number;
  limit: number;
  /** Hold the request this long (seconds) until an event arrives; 0 answers at once. */
  waitSeconds: number;
  /** Only this user's events. */
  userId?: string;
  /** Whether the caller may see a user's events (a scoped token sees only its users'). */
  allowed: (userId: string) => boolean;
  /** `allowed` as data, where the door knows it (see `UserCheck`): the user prefixes it allows, null for every user. */
  prefixes?: readonly string[] | null;
}

export interface ChangesPage {
  events: FeedEvent[];
  /** Pass it back as `after`: the seq the read reached, past events the caller may not see too. */
  next_cursor: string;
}

export interface ChangeFeedOptions {
  /** How often a long poll checks the store for events written by other processes or replicas (ms). */
  pollMs?: number;
}

/** Reads of the store a page goes through at most before it answers (each scans a bounded stretch). */
const MAX_READS = 8;
const DEFAULT_POLL_MS = 100;

/**
 * The change feed as the doors serve it: pages of events after a cursor, in seq (commit) order,
 * each with its memory joined at read time; a long poll that holds until an event arrives. Other
 * processes' and replicas' writes wake it through one cheap poll of the store's newest seq (a
 * stat of changes.jsonl; one indexed row on PostgreSQL), run only while someone waits.
 */
export class ChangeFeed {
  private readonly service: ServiceContext;
  private readonly pollMs: number;
  private readonly waiters = new Set<() => void>();
  private timer: NodeJS.Timeout | null = null;
  private known = -1;
  private closed = false;

  constructor(service: ServiceContext, options: ChangeFeedOptions = {}) {
    this.service = service;
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS;
  }

  async read(request: ChangesRequest): Promise<ChangesPage> {
    const deadline = Date.now() + request.waitSeconds * 1000;
    let after = request.after;
    for (;;) {
      const { events, scanned, caughtUp } = await this.visibleAfter(after, request);
      if (events.length > 0 || !caughtUp || Date.now() >= deadline || this.closed) {
        return { events: await this.joined(events), next_cursor: String(scanned) };
      }
      after = scanned;
      await this.waitForChange(deadline, scanned);
    }
  }

  /** Drops the events older than `days` (the newest always stays); returns how many went. */
  prune(days: number): Promise<number> {
    return this.service.store.pruneChanges(this.service.now() - days * 86_400_000);
  }

  /** Answers every long poll now (with what it has). */
  close(): void {
    this.closed = true;
    this.wakeAll();
  }

  /** The events after `after` the caller may see, from at most MAX_READS reads; `caughtUp`: none is left after `scanned`. */
  private async visibleAfter(after: number, request: ChangesRequest): Promise<{ events: ChangeEvent[]; scanned: number; caughtUp: boolean }> {
    const events: ChangeEvent[] = [];
    let scanned = after;
    let read: ChangeRead | null = null;
    for (let reads = 0; reads < MAX_READS && events.length < request.limit; reads++) {
      read = await this.service.store.readChanges(scanned, request.limit - events.length, request.userId);
      if (reads === 0 && after < read.oldest) {
        throw createError('CURSOR_EXPIRED', `The cursor ${after} is older than the feed's retention; the oldest cursor held is ${read.oldest}`, { body: { oldest_cursor: String(read.oldest) } });
      }
      events.push(...read.events.filter((event) => request.allowed(event.user_id)));
      if (read.scanned <= scanned) break;
      scanned = read.scanned;
      if (scanned >= read.last) break;
    }
    return { events, scanned, caughtUp: read === null || scanned >= read.last };
  }

  /** Each event with its memory as of its version: the current one, or the version in its history; null when gone. */
  private async joined(events: readonly ChangeEvent[]): Promise<FeedEvent[]> {
    const nowMs = this.service.now();
    const histories = new Map<string, Promise<MemoryVersion[]>>();
    const out: FeedEvent[] = [];
    for (const event of events) {
      const { version: _version, ...rest } = event;
      let memory: Memory | null = null;
      if (event.memory_id !== null && event.version !== null) {
        const state = await this.service.existingUser(event.user_id);
        const record = state?.records.get(event.memory_id);
        if (record && this.service.visible(record, nowMs)) {
          if ((record.version ?? 1) === event.version) memory = publicMemory(record);
          else {
            const key = `${event.user_id}\u0000${event.memory_id}`;
            let history = histories.get(key);
            if (!history) histories.set(key, (history = this.service.store.history(event.user_id, event.memory_id)));
            const entry = (await history).find((candidate) => candidate.version === event.version);
            if (entry) memory = asOf(record, entry);
          }
        }
      }
      out.push({ ...rest, memory });
    }
    return out;
  }

  /** Resolves when the store's newest seq passes `seen`, at the deadline, or on close. */
  private waitForChange(deadline: number, seen: number): Promise<void> {
    // Seen newer already (by another waiter's poll): nothing to wait for.
    if (this.known > seen) return Promise.resolve();
    this.known = seen;
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timeout);
        this.waiters.delete(wake);
        resolve();
      };
      const timeout = setTimeout(wake, Math.max(0, deadline - Date.now()));
      this.waiters.add(wake);
      if (!this.timer) {
        this.timer = setInterval(() => void this.poll(), this.pollMs);
        this.timer.unref();
      }
    });
  }

  private polling = false;

  private async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const last = await this.service.store.lastChangeSeq();
      if (last > this.known) {
        this.known = last;
        this.wakeAll();
      }
    } catch {
      // The store is out of reach: the waiters' reads will say so when they wake.
    } finally {
      this.polling = false;
      if (this.waiters.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = null;
      }
    }
  }

  private wakeAll(): void {
    for (const wake of [...this.waiters]) wake();
  }
}

/** The memory as it was at an older version: the current record's identity and provenance, that version's content. */
function asOf(record: StoredRecord, entry: MemoryVersion): Memory {
  const { agent_id: _agent, run_id: _run, expires_at: _expires, ...base } = publicMemory(record);
  return { ...base, ...entry };
}
