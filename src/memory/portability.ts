import type { Memory, MemoryVersion } from '../domain/memory.js';
import { denseText, lexicalText } from '../ingest/message-units.js';
import type { UnitDraft } from '../store/memory-store.js';
import { decodeVector, encodeVector } from '../store/stored-record.js';
import { publicMemory, unitText } from './memory-records.js';
import { APPEND, type ServiceContext } from './service-context.js';
import { inStoredOrder } from './user-state.js';
import { withStoredFeatures } from './unit-features.js';

/** A user's memories out of the service (eval's peers, `memorypool export`) and back in (`memorypool import`). */

/** A unit as the peers in eval/ get it: the same texts and the same vector the service uses. */
export interface ExportedUnit {
  memory: Memory;
  lexicalText: string;
  denseText: string;
  vector: Float32Array;
}

/** One line of `memorypool export`: a memory, the versions it replaced, its vector and the model that produced it. */
export type PortableRecord = Omit<Memory, 'version' | 'updated_at' | 'metadata'> &
  Partial<Pick<Memory, 'version' | 'updated_at' | 'metadata'>> & { history?: MemoryVersion[]; vec?: string; model?: string };

/** Every unit of a user with the texts and vector the service searches (for eval's peers, export); waits for a re-embedding under way. */
export async function exportUnits(service: ServiceContext, userId: string): Promise<ExportedUnit[]> {
  if (!(await service.existingUser(userId))) return [];
  await service.cache.reembeddingSettled();
  const state = await service.existingUser(userId);
  if (!state) return [];
  return inStoredOrder(state).map((record) => {
    const text = unitText(record);
    return { memory: publicMemory(record), lexicalText: lexicalText(text), denseText: denseText(text), vector: state.corpus.vectorOf(record.seq)! };
  });
}

/**
 * A user's memories as portable records: the memory, its vector and the model that made it,
 * so an import into a pool with the same model needs no re-embedding.
 */
export async function exportRecords(service: ServiceContext, userId: string): Promise<PortableRecord[]> {
  const state = await service.existingUser(userId);
  if (!state) return [];
  const exact = state.corpus.vectorsCompact ? await storedVectors(service, userId) : null;
  const out: PortableRecord[] = [];
  const nowMs = service.now();
  for (const record of inStoredOrder(state)) {
    // An expired memory is gone for every door: an export does not bring it back.
    if (!service.visible(record, nowMs)) continue;
    const history = (record.version ?? 1) > 1 ? await service.store.history(userId, record.id) : [];
    // A unit waiting to be re-embedded goes without a vector: the importing pool embeds it. So
    // does one the store no longer holds (deleted since): its import embeds it again.
    const vector = exact ? exact.get(record.seq) : state.corpus.vectorOf(record.seq);
    out.push({ ...publicMemory(record), ...(history.length > 0 ? { history } : {}), ...(vector ? { vec: encodeVector(vector), model: record.model } : {}) });
  }
  return out;
}

/**
 * The user's exact vectors by seq, read from the store: a user that keeps a graph holds only
 * int8 codes in memory (`UserCorpus.compactVectors`), and an export must carry what the store has.
 */
async function storedVectors(service: ServiceContext, userId: string): Promise<Map<number, Float32Array>> {
  const vectors = new Map<number, Float32Array>();
  for (const { record, vector } of (await service.store.load(userId)).units) {
    if (vector && record.model === service.embedder.modelId) vectors.set(record.seq, vector);
  }
  return vectors;
}

/**
 * Imports portable records (from `exportRecords`). Memories whose id the user already holds
 * are skipped, so an import can be repeated; vectors of another model are re-embedded.
 */
export async function importRecords(service: ServiceContext, records: readonly PortableRecord[], onProgress?: (done: number) => void): Promise<{ imported: number; skipped: number; reembedded: number }> {
  const byUser = new Map<string, PortableRecord[]>();
  for (const record of records) {
    let list = byUser.get(record.user_id);
    if (!list) byUser.set(record.user_id, (list = []));
    list.push(record);
  }
  let imported = 0;
  let skipped = 0;
  let reembedded = 0;
  let done = 0;
  for (const [userId, list] of byUser) {
    for (let start = 0; start < list.length; start += 256) {
      const held = (await service.cache.fresh(userId)).records;
      const batch = list.slice(start, start + 256).filter((record) => {
        if (held.has(record.id)) skipped++;
        return !held.has(record.id);
      });
      const stale = batch.filter((record) => record.model !== service.embedder.modelId || record.vec === undefined);
      const fresh = await service.embed(stale.map((record) => denseText(unitText(record))));
      const vectorById = new Map(stale.map((record, i) => [record.id, fresh[i]]));
      reembedded += stale.length;
      await service.underLock(userId, async (current) => {
        const drafts: UnitDraft[] = batch
          .filter((record) => !current.records.has(record.id))
          .map(({ vec, model: _model, ...memory }) => ({ record: withStoredFeatures({ ...memory, model: service.embedder.modelId }), vector: vectorById.get(memory.id) ?? decodeVector(vec!) }));
        const result = (await service.store.append(userId, drafts))!;
        service.counted(drafts.length);
        service.cache.applyAppend(current, result, drafts.map(({ vector }) => vector));
        imported += drafts.length;
      }, APPEND);
      done += Math.min(256, list.length - start);
      onProgress?.(done);
    }
  }
  return { imported, skipped, reembedded };
}
