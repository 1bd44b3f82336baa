/**
 * A peer search engine given exactly the units and vectors our service holds (from
 * `MemoryService.exportUnits`), so the comparison is about ranking alone.
 */
export interface PeerUnit {
  /** Position in the user's exported list; what `search` returns. */
  index: number;
  lexicalText: string;
  vector: Float32Array;
}

export interface Peer {
  readonly name: string;
  /** How the peer is configured, for the report. */
  readonly description: string;
  /** Indexes one user's units; called once per user before any search. */
  addUser(userId: string, units: readonly PeerUnit[]): Promise<void>;
  /** Unit indexes, best first. */
  search(userId: string, query: string, queryVector: Float32Array, limit: number): Promise<number[]>;
  close(): Promise<void>;
}
