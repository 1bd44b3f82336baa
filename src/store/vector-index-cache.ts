/** The files of one user's index cache (the JSONL store keeps them beside the memories). */
export interface IndexCacheFiles {
  cacheFilePath(userId: string, name: string): string;
  /** The written file's SHA-256; null when the user has no memories file any more (deleted meanwhile: nothing written). */
  writeCacheFile(userId: string, name: string, write: (tempPath: string) => Promise<void>): Promise<string | null>;
  /** `writeCacheFile` in two steps: the bytes now, without the cache lock; the rename by `commit`, under it. Null as above. */
  stageCacheFile(userId: string, name: string, write: (tempPath: string) => Promise<void>): Promise<StagedCacheFile | null>;
  writeCacheText(userId: string, name: string, text: string): Promise<void>;
  cacheFileMatches(userId: string, name: string, checksum: string): Promise<boolean>;
  readCacheText(userId: string, name: string): Promise<string | null>;
  /** Runs `task` alone among every process's cache readers and writers of this user (the graph and its meta are a pair). */
  withCacheLock<T>(userId: string, task: () => Promise<T>): Promise<T>;
}

/** A cache file written beside its place (fsynced, its checksum known), not yet renamed into it. */
export interface StagedCacheFile {
  checksum: string;
  /** Renames the file into place (the caller holds the cache lock); false when the user is gone meanwhile. */
  commit(): Promise<boolean>;
  /** Removes the staged file unless it was committed. */
  discard(): Promise<void>;
}

/** The per-user HNSW cache: the graph file and, beside it, what built it and its checksum. */
export const VECTOR_INDEX_FILE = 'vectors.hnsw';
export const VECTOR_INDEX_META_FILE = 'vectors.meta.json';

export interface VectorIndexMeta {
  model: string;
  dimensions: number;
  analyzer: string;
  /** SHA-256 of the graph file: hnswlib trusts the bytes it reads (a damaged graph can crash the process). */
  sha256: string;
  /** The index held every memory up to `max_seq` when written. */
  complete: boolean;
  max_seq: number;
}

export type CachedVectorIndex =
  | { status: 'intact'; meta: VectorIndexMeta; file: string }
  | { status: 'missing' }
  | { status: 'damaged'; metaFile: string; reason: string };

/**
 * Writes the graph through `write(tempPath)` (temp file, then rename), then its meta with the
 * checksum. The rename and the meta go under the cache lock: with another process writing the
 * same user's cache, a reader would otherwise find one writer's graph beside the other's meta.
 * The graph's bytes are written and hashed before it, outside: seconds for a large user, and the
 * user's rewrites (deletes, updates) take that lock too. Any process may use what another wrote:
 * the graph is keyed by seq (never reused), and labels a reader does not hold are dropped on
 * attach, units it lacks added.
 */
export async function writeVectorIndexCache(
  store: IndexCacheFiles,
  userId: string,
  write: (tempPath: string) => Promise<void>,
  meta: Omit<VectorIndexMeta, 'sha256'>,
): Promise<void> {
  const staged = await store.stageCacheFile(userId, VECTOR_INDEX_FILE, write);
  if (!staged) return;
  try {
    await store.withCacheLock(userId, async () => {
      if (await staged.commit()) await store.writeCacheText(userId, VECTOR_INDEX_META_FILE, JSON.stringify({ ...meta, sha256: staged.checksum }) + '\n');
    });
  } finally {
    await staged.discard();
  }
}

/**
 * The cache's meta once the graph file is proven intact; `missing` when there is no meta at all.
 * The caller holds the cache lock (`withCacheLock`) until it has read the graph, so that the file
 * checked is the file read.
 */
export async function readVectorIndexCache(store: IndexCacheFiles, userId: string): Promise<CachedVectorIndex> {
  const metaFile = store.cacheFilePath(userId, VECTOR_INDEX_META_FILE);
  let meta: Partial<VectorIndexMeta>;
  try {
    const text = await store.readCacheText(userId, VECTOR_INDEX_META_FILE);
    if (text === null) return { status: 'missing' };
    meta = JSON.parse(text) as Partial<VectorIndexMeta>;
  } catch (error) {
    return { status: 'damaged', metaFile, reason: `unreadable meta: ${(error as Error).message}` };
  }
  if (typeof meta.sha256 !== 'string' || !(await store.cacheFileMatches(userId, VECTOR_INDEX_FILE, meta.sha256))) {
    return { status: 'damaged', metaFile, reason: 'the graph does not match its recorded checksum' };
  }
  return { status: 'intact', meta: meta as VectorIndexMeta, file: store.cacheFilePath(userId, VECTOR_INDEX_FILE) };
}
