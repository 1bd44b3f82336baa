import { create, insertMultiple, search, type AnyOrama } from '@orama/orama';
import type { Peer, PeerUnit } from './peer.js';

/**
 * Orama's hybrid search at its defaults (BM25 over its own tokenizer, min-max normalised and
 * summed 0.5/0.5 with cosine similarity), one database per user. The one change: its vector
 * half keeps only cosine ≥ 0.8 by default, which would drop most units from the ranking, so the
 * threshold is lowered to -1 and every unit can be ranked, as in our service.
 */
export class OramaPeer implements Peer {
  readonly name = 'orama';
  readonly description = 'Orama hybrid (defaults: its tokenizer, BM25, weights 0.5/0.5), vector similarity threshold -1';
  private readonly databases = new Map<string, AnyOrama>();

  constructor(private readonly dimensions: number) {}

  async addUser(userId: string, units: readonly PeerUnit[]): Promise<void> {
    const db = create({ schema: { text: 'string', embedding: `vector[${this.dimensions}]` } as const });
    await insertMultiple(
      db,
      units.map((unit) => ({ id: String(unit.index), text: unit.lexicalText, embedding: Array.from(unit.vector) })),
      1000,
    );
    this.databases.set(userId, db);
  }

  async search(userId: string, query: string, queryVector: Float32Array, limit: number): Promise<number[]> {
    const db = this.databases.get(userId);
    if (!db) return [];
    const result = await search(db, {
      mode: 'hybrid',
      term: query,
      vector: { value: Array.from(queryVector), property: 'embedding' },
      similarity: -1,
      limit,
    });
    return result.hits.map((hit) => Number(hit.id));
  }

  async close(): Promise<void> {
    this.databases.clear();
  }
}
