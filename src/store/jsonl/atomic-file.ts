import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import { storageError } from '../../errors.js';

let tempCounter = 0;

/** A temp name beside `file` that no other writer uses, in this process (any of its threads: each counts on its own) or another. */
export function tempName(file: string): string {
  return `${file}.tmp-${process.pid}-${threadId}-${++tempCounter}`;
}

/**
 * Replaces `file` with what `write` puts in a temp file beside it, renamed into place, so a
 * reader sees the old file or the new one, never half of one. `durable` (the default): the temp
 * file is fsynced before the rename and the folder after it, so a crash too leaves one of the two
 * whole; without it (caches, seq floors) a crash may lose the new file, which only the running
 * processes, sharing the page cache, need. Errors come as storage errors, the temp file removed.
 */
export async function writeAtomically(file: string, write: (handle: FileHandle) => Promise<void>, options: { durable?: boolean } = {}): Promise<void> {
  const durable = options.durable ?? true;
  const temp = tempName(file);
  let handle: FileHandle | undefined;
  try {
    handle = await open(temp, 'w', 0o600);
    await write(handle);
    if (durable) await handle.sync();
    await handle.close();
    handle = undefined;
    await rename(temp, file);
    if (durable) await fsyncPath(path.dirname(file));
  } catch (error) {
    await handle?.close().catch(() => undefined);
    await rm(temp, { force: true }).catch(() => undefined);
    throw storageError(error);
  }
}

/** Writes all of `payload` at the handle's position (a write may take only part of it). */
export async function writeFully(handle: FileHandle, payload: Buffer): Promise<void> {
  let offset = 0;
  while (offset < payload.length) {
    const { bytesWritten } = await handle.write(payload, offset, payload.length - offset);
    offset += bytesWritten;
  }
}

/** fsync of a file or a folder by path (a folder's, so that a rename or a removal in it is durable). */
export async function fsyncPath(target: string): Promise<void> {
  const handle = await open(target, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
