import { open, type FileHandle } from 'node:fs/promises';
import { storageError } from '../../errors.js';
import { sidecarHeader, SIDECAR_HEADER_BYTES, VECTOR_SIDECAR_FILE } from '../vector-sidecar.js';
import type { UserLayout } from './layout.js';
import { countLines, indexIn, stringEnd } from './line-scanner.js';
import { readLines } from './file-pieces.js';
import { notRegularFile } from './load-records.js';

/** `,"session_id":"` can only be the key itself, as with `vec` (see line-scanner.ts). */
const SESSION_KEY = Buffer.from(',"session_id":"', 'latin1');

/**
 * How many whole lines the user's memories file holds, for counts (nothing is parsed). A
 * sidecar built from this very file (same inode, which a rewrite changes) states the count of
 * the lines it covers, so only the lines appended since are scanned.
 */
export async function countRecords(layout: UserLayout, userId: string): Promise<number> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(layout.memoriesFile(userId), 'r');
    const { ino, size } = await handle.stat();
    const header = await readHeader(layout.userFile(userId, VECTOR_SIDECAR_FILE));
    const known = header && header.inode === ino && header.covered <= size ? header : { count: 0, covered: 0 };
    if (known.covered === size) return known.count;
    // A piece at a time (file-pieces.ts): a million memories' file is 3 GB, more than one read
    // takes, and a buffer that size only to count newlines is memory fresh from the OS.
    // Whole lines only: a line not finished yet (a write under way) is no memory.
    let count = known.count;
    await readLines(handle, known.covered, size, {
      lines: (buffer, end) => {
        count += countLines(buffer.subarray(0, end));
        return true;
      },
    });
    return count;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return 0;
    throw storageError(error);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

async function readHeader(file: string): Promise<ReturnType<typeof sidecarHeader>> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(file, 'r');
    const header = Buffer.alloc(SIDECAR_HEADER_BYTES);
    const { bytesRead } = await handle.read(header, 0, header.length, 0);
    return sidecarHeader(header.subarray(0, bytesRead));
  } catch {
    return null;
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

/**
 * Memories (whole lines) and distinct session ids in the user's file, read from the bytes without
 * parsing a line; with `nowMs`, not counting the memories expired by then (only a line that
 * mentions `expires_at` at all is parsed, to read its own, not a metadata key's or a version's).
 */
export async function countSessions(layout: UserLayout, userId: string, nowMs?: number): Promise<{ count: number; sessions: number; expiring: boolean }> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(layout.memoriesFile(userId), 'r');
    const stats = await handle.stat();
    if (!stats.isFile()) throw notRegularFile();
    const sessions = new Set<string>();
    let count = 0;
    let expiring = false;
    // A piece at a time (file-pieces.ts): counting every user of a pool (its first /health or
    // /mem/stats) reads each file once, and the event loop is free again between pieces.
    await readLines(handle, 0, stats.size, {
      lines: (content, to) => {
        let start = 0;
        for (let end = indexIn(content, 10, start, to); end !== -1; end = indexIn(content, 10, start, to)) {
          if (end > start && !(nowMs !== undefined && expiredLine(content, start, end, nowMs))) {
            count++;
            const key = indexIn(content, SESSION_KEY, start, end);
            if (key !== -1 && key < end) {
              const value = stringEnd(content, key + SESSION_KEY.length, end);
              if (value > key + SESSION_KEY.length) sessions.add(content.toString('utf8', key + SESSION_KEY.length, value));
            }
          }
          start = end + 1;
        }
        // Any mention will do (a metadata key too): it only means the counts depend on the instant.
        expiring ||= indexIn(content, EXPIRES_KEY, 0, to) !== -1;
        return true;
      },
    });
    return { count, sessions: sessions.size, expiring };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { count: 0, sessions: 0, expiring: false };
    throw storageError(error);
  } finally {
    await handle?.close().catch(() => undefined);
  }
}

const EXPIRES_KEY = Buffer.from('"expires_at":');

function expiredLine(content: Buffer, start: number, end: number, nowMs: number): boolean {
  const key = indexIn(content, EXPIRES_KEY, start, end);
  if (key === -1 || key >= end) return false;
  try {
    const expiresAt = (JSON.parse(content.toString('utf8', start, end)) as { expires_at?: unknown }).expires_at;
    return typeof expiresAt === 'string' && Date.parse(expiresAt) <= nowMs;
  } catch {
    return false;
  }
}
