import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as LanceDb from '@lancedb/lancedb';
import type { Peer, PeerUnit } from './peer.js';

/**
 * LanceDB's own hybrid search: its full-text index (default tokenizer and BM25) and an
 * exhaustive vector search (default L2, which ranks unit vectors as cosine does), fused by its
 * RRF reranker (k = 60). One table per user in a temporary directory.
 *
 * The module is loaded on first use, after quietening its Rust logger (it warns on stderr for
 * every query otherwise), and so that a platform without its native binary fails this peer only.
 */
export class LanceDbPeer implements Peer {
  readonly name = 'lancedb';
  readonly description = 'LanceDB 0.31 hybrid: FTS index (defaults) + flat vector search, RRF k=60';
  private readonly tables = new Map<string, LanceDb.Table>();
  private lancedb: typeof LanceDb | undefined;
  private connection: LanceDb.Connection | undefined;
  private directory: string | undefined;
  private reranker: LanceDb.rerankers.RRFReranker | undefined;

  async addUser(userId: string, units: readonly PeerUnit[]): Promise<void> {
    if (!this.lancedb || !this.connection) {
      process.env.LANCEDB_LOG ??= 'error';
      this.lancedb = await import('@lancedb/lancedb');
      this.directory = await mkdtemp(join(tmpdir(), 'eval-lancedb-'));
      this.connection = await this.lancedb.connect(this.directory);
      this.reranker = await this.lancedb.rerankers.RRFReranker.create(60);
    }
    const rows = units.map((unit) => ({ unit: unit.index, text: unit.lexicalText, vector: Array.from(unit.vector) }));
    const table = await this.connection.createTable(`user_${this.tables.size}`, rows, { mode: 'overwrite' });
    await table.createIndex('text', { config: this.lancedb.Index.fts() });
    this.tables.set(userId, table);
  }

  async search(userId: string, query: string, queryVector: Float32Array, limit: number): Promise<number[]> {
    const table = this.tables.get(userId);
    if (!table || !this.reranker) return [];
    const rows = await table
      .query()
      .fullTextSearch(query)
      .nearestTo(Array.from(queryVector))
      .rerank(this.reranker)
      .select(['unit'])
      .limit(limit)
      .toArray();
    return rows.map((row: { unit: number }) => Number(row.unit));
  }

  async close(): Promise<void> {
    for (const table of this.tables.values()) table.close();
    this.tables.clear();
    this.connection?.close();
    this.connection = undefined;
    if (this.directory) await rm(this.directory, { recursive: true, force: true });
  }
}
