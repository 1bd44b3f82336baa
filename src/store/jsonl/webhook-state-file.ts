import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { storageError } from '../../errors.js';
import { isStale, withFileLock } from '../file-lock.js';
import type { HookHolder, HookProgress, HookState, WebhookStateStore } from '../webhook-state.js';
import { NEW_PROGRESS } from '../webhook-state.js';
import { writeAtomically, writeFully } from './atomic-file.js';

interface StoredHook extends HookProgress {
  holder: HookHolder | null;
  lease_expires_at: number | null;
}

interface StateFile {
  hooks: Record<string, StoredHook>;
}

/**
 * The webhooks' progress and leases on a data directory: `sync/webhooks.json`, read and rewritten
 * under `sync/webhooks.lock` (file-lock.ts: one process at a time, on this host), each rewrite
 * durable (temp file, fsync, rename, fsync of the folder) before a delivery counts as done, so a
 * SIGKILL leaves the file as it was before or after the write, and a restart resumes from the last
 * event a receiver acknowledged.
 *
 * The lease is a holder and an expiry in the same file. Processes on one data directory share a
 * host and its clock, so the expiry is judged by that clock; and a holder whose process is gone
 * (SIGKILL: its pid is dead or reused) is taken over at once rather than at the expiry.
 */
export class JsonlWebhookState implements WebhookStateStore {
  private readonly file: string;
  private readonly lockFile: string;

  constructor(syncDir: string) {
    this.file = path.join(syncDir, 'webhooks.json');
    this.lockFile = path.join(syncDir, 'webhooks.lock');
  }

  claim(hookId: string, holder: HookHolder, leaseMs: number, startSeq: number): Promise<HookProgress | null> {
    return this.locked(async (state) => {
      const now = Date.now();
      const hook = state.hooks[hookId] ?? { delivered_seq: startSeq, ...NEW_PROGRESS, holder: null, lease_expires_at: null };
      const current = hook.holder;
      const free = current === null || current.id === holder.id || (hook.lease_expires_at ?? 0) <= now || isStale({ ...current, nonce: current.id });
      if (!free) return { result: null };
      // Renewed once half the lease has gone: most claims by the holder then read and write nothing.
      const fresh = current?.id === holder.id && state.hooks[hookId] !== undefined && (hook.lease_expires_at ?? 0) - now > leaseMs / 2;
      const { holder: _holder, lease_expires_at: _expires, ...progress } = hook;
      if (fresh) return { result: progress };
      state.hooks[hookId] = { ...hook, holder, lease_expires_at: now + leaseMs };
      return { result: progress, write: true };
    });
  }

  save(hookId: string, holderId: string, progress: HookProgress): Promise<boolean> {
    return this.locked(async (state) => {
      const hook = state.hooks[hookId];
      if (hook?.holder?.id !== holderId) return { result: false };
      state.hooks[hookId] = { ...hook, ...progress, delivered_seq: Math.max(hook.delivered_seq, progress.delivered_seq) };
      return { result: true, write: true };
    });
  }

  release(hookId: string, holderId: string): Promise<void> {
    return this.locked(async (state) => {
      const hook = state.hooks[hookId];
      if (hook?.holder?.id !== holderId) return { result: undefined };
      state.hooks[hookId] = { ...hook, holder: null, lease_expires_at: null };
      return { result: undefined, write: true };
    });
  }

  async states(): Promise<HookState[]> {
    // No lock: the file is replaced whole by a rename, so a read sees one version of it.
    const state = await this.read();
    return Object.entries(state.hooks).map(([hookId, { holder, ...rest }]) => ({ ...rest, hook_id: hookId, holder: holder?.id ?? null }));
  }

  private locked<T>(task: (state: StateFile) => Promise<{ result: T; write?: boolean }>): Promise<T> {
    return withFileLock(this.lockFile, async () => {
      const state = await this.read();
      const { result, write } = await task(state);
      if (write) await writeAtomically(this.file, (handle) => writeFully(handle, Buffer.from(JSON.stringify(state) + '\n')));
      return result;
    });
  }

  private async read(): Promise<StateFile> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { hooks: {} };
      throw storageError(error);
    }
    const parsed = JSON.parse(text) as Partial<StateFile>;
    return { hooks: parsed.hooks ?? {} };
  }
}
