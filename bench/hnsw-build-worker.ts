import { parentPort } from 'node:worker_threads';
import hnswlib from 'hnswlib-node';

/**
 * Builds an HNSW cache file off the main thread (hnswlib's addPoint is synchronous), while the
 * main thread writes the records.
 */

export interface BuildRequest {
  /** count × dimensions float32, row i labelled i (the record's seq). */
  vectors: SharedArrayBuffer;
  count: number;
  dimensions: number;
  capacity: number;
  m: number;
  efConstruction: number;
  file: string;
}

export interface BuildReply {
  error?: string;
}

parentPort?.on('message', async (request: BuildRequest) => {
  try {
    const index = new hnswlib.HierarchicalNSW('cosine', request.dimensions);
    index.initIndex({ maxElements: request.capacity, m: request.m, efConstruction: request.efConstruction, randomSeed: 100, allowReplaceDeleted: false });
    const all = new Float32Array(request.vectors);
    for (let label = 0; label < request.count; label++) {
      index.addPoint(Array.from(all.subarray(label * request.dimensions, (label + 1) * request.dimensions)), label);
    }
    await index.writeIndex(request.file);
    parentPort?.postMessage({} satisfies BuildReply);
  } catch (error) {
    parentPort?.postMessage({ error: (error as Error).message } satisfies BuildReply);
  }
});
