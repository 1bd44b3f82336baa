import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { afterEach } from 'vitest';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import type { Embedder } from '../../src/embedding/embedder.js';
import { Authenticator, type TokenGrant } from '../../src/http/auth.js';
import { silentLogger } from '../../src/logger.js';
import { MemoryService, type MemoryServiceOptions } from '../../src/memory/memory-service.js';
import { openStore } from '../../src/open-service.js';
import { buildServerApp } from '../../src/server-app.js';

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** A fresh data directory, removed after the test. */
export async function tempDir(prefix = 'memorypool-test-'): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function testEmbedder(): Embedder {
  return new HashEmbedder({ dimensions: 64 });
}

/** The service on a store of the caller's, on PostgreSQL (`databaseUrl`), or on a data directory (a temp one by default). */
export type TestServiceOptions = Partial<MemoryServiceOptions> & { dataDir?: string; databaseUrl?: string };

export async function openService(options: TestServiceOptions = {}): Promise<MemoryService> {
  const { dataDir, databaseUrl, ...rest } = options;
  const logger = options.logger ?? silentLogger();
  const store = options.store ?? openStore({ dataDir: databaseUrl === undefined ? (dataDir ?? (await tempDir())) : undefined, databaseUrl }, logger);
  const service = await MemoryService.open({
    embedder: options.embedder ?? testEmbedder(),
    logger,
    indexFlushDelayMs: 0,
    ...rest,
    store,
  });
  cleanups.push(() => service.close().catch(() => undefined));
  return service;
}

export interface BuiltApp {
  app: FastifyInstance;
  service: MemoryService;
  dataDir: string;
}

/** Builds the app on a temp data dir with the test embedder; closed after the test. */
export async function build(options: { token?: string; grants?: TokenGrant[]; dataDir?: string; topKMax?: number; bodyLimit?: number; service?: TestServiceOptions } = {}): Promise<BuiltApp> {
  const dataDir = options.dataDir ?? (await tempDir());
  const service = await openService({ dataDir, ...options.service });
  const authenticator = options.grants ? new Authenticator(options.grants) : Authenticator.fromConfig({ token: options.token });
  const app = await buildServerApp({ service, authenticator, logger: silentLogger(), topKMax: options.topKMax, bodyLimit: options.bodyLimit });
  cleanups.push(() => app.close());
  return { app, service, dataDir };
}

export function register(cleanup: () => Promise<void>): void {
  cleanups.push(cleanup);
}

/** The contents of every file under a directory (a deleted memory must be in none of them). */
export async function readFilesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) out.push(await readFile(path.join(entry.parentPath, entry.name), 'latin1'));
  }
  return out;
}
