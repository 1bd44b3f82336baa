import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { storageError } from '../../errors.js';
import type { StagedCacheFile } from '../vector-index-cache.js';
import { fsyncPath, tempName } from './atomic-file.js';
import type { UserLayout } from './layout.js';
import { memoriesStamp } from './user-file.js';

/**
 * Writes an index cache file's bytes through `write(tempPath)` beside it, fsynced and hashed;
 * `commit` renames them into place, so a reader never sees a half-written index. Needs no lock:
 * the temp name is this writer's alone, and a deletion of the user that removes it meanwhile
 * makes this (or `commit`) report the user gone.
 */
export async function stageCacheFile(layout: UserLayout, userId: string, name: string, write: (tempPath: string) => Promise<void>): Promise<StagedCacheFile | null> {
  // A cache never creates a folder: a user deleted by another process stays deleted.
  if (!(await memoriesStamp(layout, userId))) return null;
  const dir = layout.userDir(userId);
  const file = path.join(dir, name);
  const temp = tempName(file);
  const discard = (): Promise<void> => rm(temp, { force: true }).catch(() => undefined);
  try {
    await write(temp);
    await fsyncPath(temp);
    const checksum = await sha256File(temp);
    const commit = async (): Promise<boolean> => {
      if (!(await memoriesStamp(layout, userId))) return false;
      try {
        await rename(temp, file);
        await fsyncPath(dir);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
        throw storageError(error);
      }
    };
    return { checksum, commit, discard };
  } catch (error) {
    await discard();
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw storageError(error);
  }
}

/** `stageCacheFile` and its commit at once; the file's checksum, or null when the user is gone. */
export async function writeCacheFile(layout: UserLayout, userId: string, name: string, write: (tempPath: string) => Promise<void>): Promise<string | null> {
  const staged = await stageCacheFile(layout, userId, name, write);
  if (!staged) return null;
  try {
    return (await staged.commit()) ? staged.checksum : null;
  } finally {
    await staged.discard();
  }
}

export async function writeCacheText(layout: UserLayout, userId: string, name: string, text: string): Promise<void> {
  await writeCacheFile(layout, userId, name, (temp) => writeFile(temp, text, { mode: 0o600 }));
}

export async function removeCacheFile(layout: UserLayout, userId: string, name: string): Promise<void> {
  await rm(layout.userFile(userId, name), { force: true });
}

/**
 * Whether a cache file still has the checksum recorded when it was written. A library that
 * reads a binary index trusts its bytes (a damaged HNSW graph can crash the process), so a
 * cache is read only once it proves intact.
 */
export async function cacheFileMatches(layout: UserLayout, userId: string, name: string, checksum: string): Promise<boolean> {
  try {
    return (await sha256File(layout.userFile(userId, name))) === checksum;
  } catch {
    return false;
  }
}

/** A cache file's text, or null when there is none. */
export async function readCacheText(layout: UserLayout, userId: string, name: string): Promise<string | null> {
  try {
    return await readFile(layout.userFile(userId, name), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}

async function sha256File(file: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
