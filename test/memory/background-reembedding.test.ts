import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EmbedOptions, Embedder } from '../../src/embedding/embedder.js';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { SentenceTransformerEmbedder } from '../../src/embedding/sentence-transformer-embedder.js';
import type { MemoryService } from '../../src/memory/memory-service.js';
import { silentLogger } from '../../src/logger.js';
import { JsonlMemoryStore } from '../../src/store/jsonl-memory-store.js';
import { openService, tempDir } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';
import { HIDDEN, writeTinyBert } from '../support/tiny-bert.js';

/**
 * The tiny BERT with a gate on stored texts: the test decides when the background re-embedding
 * may proceed, and counts the stored texts it encoded. Queries pass at once.
 */
class GatedEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  ingestTexts = 0;
  private open: Promise<void>;
  release: () => void = () => undefined;

  constructor(private readonly inner: Embedder, gated: boolean) {
    this.modelId = inner.modelId;
    this.dimensions = inner.dimensions;
    this.open = gated ? new Promise((resolve) => (this.release = resolve)) : Promise.resolve();
  }

  ready(): Promise<void> {
    return this.inner.ready();
  }

  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    if (options.priority !== 'query') {
      await this.open;
      this.ingestTexts += texts.length;
    }
    return this.inner.embed(texts, options);
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

const TURNS = ['my sister went to paris in may', 'the dog likes the park', 'we had pizza for dinner', 'i play the guitar at night', 'my brother has a new bike'];

/** Where the pool lives: a data directory, or a PostgreSQL database. */
type Pool = { dataDir: string } | { databaseUrl: string };

async function storeWithHashModel(pool: Pool): Promise<void> {
  const first = await openService({ ...pool, embedder: new HashEmbedder({ dimensions: 32 }) });
  await first.addConversation({ requestId: 'r1', userId: 'u', sessionId: 's1', messages: TURNS.map((content) => ({ role: 'user', content })) });
  await first.close();
}

function denseTerm(hit: { explanation?: { terms: { term: string; value: number }[] } }): number {
  return hit.explanation?.terms.find((term) => term.term === 'dense')?.value ?? 0;
}

describe('BackgroundReembedding (hash model → a tiny BERT)', () => {
  let modelDir: string;
  let bert: SentenceTransformerEmbedder;

  beforeAll(async () => {
    modelDir = await mkdtemp(path.join(os.tmpdir(), 'memorypool-reembed-'));
    await writeTinyBert(modelDir);
    bert = new SentenceTransformerEmbedder({ modelDir });
  });
  afterAll(async () => {
    await bert.close();
    await rm(modelDir, { recursive: true, force: true });
  });

  async function openWithBert(pool: Pool, gated: boolean): Promise<{ service: MemoryService; embedder: GatedEmbedder }> {
    const embedder = new GatedEmbedder(new SentenceTransformerEmbedder({ modelDir }), gated);
    const service = await openService({ ...pool, embedder });
    return { service, embedder };
  }

  it('serves at once by BM25 and the cues alone, then with the new vectors once every unit has one', async () => {
    const pool = { dataDir: await tempDir() };
    await storeWithHashModel(pool);
    const { service, embedder } = await openWithBert(pool, true);

    // Re-embedding waits on the gate: the user is served meanwhile, its old 32-dim vectors unused.
    const during = await service.search({ userId: 'u', query: 'the dog park', limit: 5, explain: true });
    expect(during[0]!.memory.text).toBe('the dog likes the park');
    expect(during.every((hit) => denseTerm(hit) === 0)).toBe(true);
    expect(embedder.ingestTexts).toBe(0);
    expect((await service.stats()).embedder.reembedding).toBe(TURNS.length);

    embedder.release();
    await service.reembeddingSettled();
    expect(embedder.ingestTexts).toBe(TURNS.length);
    expect((await service.stats()).embedder.reembedding).toBe(0);
    const after = await service.search({ userId: 'u', query: 'the dog park', limit: 5, explain: true });
    expect(after.some((hit) => denseTerm(hit) > 0)).toBe(true);

    // The vectors searched are the new model's, for each unit's own dense text.
    const units = await service.exportUnits('u');
    const wanted = await bert.embed(units.map((unit) => unit.denseText));
    units.forEach((unit, i) => {
      expect(unit.vector.length).toBe(HIDDEN);
      expect(Array.from(unit.vector)).toEqual(Array.from(wanted[i]!));
    });
  });

  it('writes the new vectors and model id to the store, so the next start re-embeds nothing', async () => {
    const dataDir = await tempDir();
    await storeWithHashModel({ dataDir });
    const { service } = await openWithBert({ dataDir }, false);
    await service.search({ userId: 'u', query: 'dog', limit: 1 });
    await service.reembeddingSettled();
    await service.close();

    const userDir = path.join(dataDir, 'users', (await readdir(path.join(dataDir, 'users')))[0]!);
    const lines = (await readFile(path.join(userDir, 'memories.jsonl'), 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { model?: string; vec?: string });
    expect(lines.every((line) => line.model === bert.modelId && Buffer.from(line.vec!, 'base64').length === HIDDEN * 4)).toBe(true);

    const { service: again, embedder } = await openWithBert({ dataDir }, false);
    const [hit] = await again.search({ userId: 'u', query: 'pizza dinner', limit: 1, explain: true });
    expect(hit!.memory.text).toBe('we had pizza for dinner');
    expect(denseTerm(hit!)).toBeGreaterThan(0);
    expect(embedder.ingestTexts).toBe(0);
  });

  it('re-embeds only what a stopped run left: units already stored with the new model keep their vectors', async () => {
    // A store as a run stopped halfway leaves it: three units of the new model, two of the old.
    const dataDir = await tempDir();
    const store = new JsonlMemoryStore(dataDir, silentLogger());
    await store.init();
    const done = await bert.embed(TURNS.slice(0, 3));
    const now = new Date().toISOString();
    await store.append(
      'u',
      TURNS.map((text, i) => ({
        record: { id: `m${i}`, user_id: 'u', text, tags: [], importance: 0.5, source: 'cli', created_at: now, model: i < 3 ? bert.modelId : 'hash-embedder@1/32' },
        vector: i < 3 ? done[i]! : new Float32Array(32).fill(0.5),
      })),
    );
    await store.close();

    const { service, embedder } = await openWithBert({ dataDir }, false);
    await service.search({ userId: 'u', query: 'dog', limit: 1 });
    await service.reembeddingSettled();
    expect(embedder.ingestTexts).toBe(2);
    const units = await service.exportUnits('u');
    const wanted = await bert.embed(units.map((unit) => unit.denseText));
    units.forEach((unit, i) => expect(Array.from(unit.vector)).toEqual(Array.from(i < 3 ? done[i]! : wanted[i]!)));
  });

  it('on PostgreSQL too: the new vectors are stored, and another replica started after re-embeds nothing', async () => {
    const pool = { databaseUrl: await freshDatabase() };
    await storeWithHashModel(pool);
    const { service } = await openWithBert(pool, false);
    await service.search({ userId: 'u', query: 'dog', limit: 1 });
    await service.reembeddingSettled();
    const { service: replica, embedder } = await openWithBert(pool, false);
    const [hit] = await replica.search({ userId: 'u', query: 'pizza dinner', limit: 1, explain: true });
    expect(hit!.memory.text).toBe('we had pizza for dinner');
    expect(denseTerm(hit!)).toBeGreaterThan(0);
    expect(embedder.ingestTexts).toBe(0);
    expect((await replica.exportUnits('u')).every((unit) => unit.vector.length === HIDDEN)).toBe(true);
  });

  it('takes writes and deletes while re-embedding, and embeds what is left', async () => {
    const pool = { dataDir: await tempDir() };
    await storeWithHashModel(pool);
    const { service, embedder } = await openWithBert(pool, true);
    const [gone] = await service.search({ userId: 'u', query: 'guitar', limit: 1 });
    await service.delete('u', gone!.memory.id);
    // An Add encodes through the same gate; it is stored with the new model's vector.
    const adding = service.addMemory({ userId: 'u', text: 'the cat went to the lake' });
    embedder.release();
    await adding;
    await service.reembeddingSettled();

    const units = await service.exportUnits('u');
    expect(units.map((unit) => unit.memory.text).sort()).toEqual([...TURNS.filter((text) => !text.includes('guitar')), 'the cat went to the lake'].sort());
    const wanted = await bert.embed(units.map((unit) => unit.denseText));
    units.forEach((unit, i) => expect(Array.from(unit.vector)).toEqual(Array.from(wanted[i]!)));
  });
});
