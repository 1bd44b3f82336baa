import type { Embedder } from './embedder.js';

/**
 * A fast, deterministic embedder for tests and quick experiments, where the model is beside the
 * point: words and their character trigrams are hashed into signed buckets (the "hashing trick"),
 * so texts that share words land close together. No model, no I/O, microseconds per text.
 */
export class HashEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;

  constructor(options: { dimensions?: number } = {}) {
    this.dimensions = options.dimensions ?? 64;
    this.modelId = `hash-embedder@1/${this.dimensions}`;
  }

  async ready(): Promise<void> {}

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text));
  }

  async close(): Promise<void> {}

  private embedOne(text: string): Float32Array {
    if (text.trim() === '') throw new Error('HashEmbedder: cannot embed an empty text');
    const vector = new Float32Array(this.dimensions);
    for (const word of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
      addFeature(vector, word, 1);
      const padded = `#${word}#`;
      for (let i = 0; i + 3 <= padded.length; i++) addFeature(vector, padded.slice(i, i + 3), 0.3);
    }
    let norm = 0;
    for (const value of vector) norm += value * value;
    // A text of punctuation only still gets a valid unit vector.
    if (norm === 0) {
      vector[0] = 1;
      return vector;
    }
    const scale = 1 / Math.sqrt(norm);
    for (let i = 0; i < vector.length; i++) vector[i] *= scale;
    return vector;
  }
}

function addFeature(vector: Float32Array, feature: string, weight: number): void {
  const hash = fnv1a(feature);
  const sign = hash & 0x80000000 ? -1 : 1;
  vector[hash % vector.length] += sign * weight;
}

function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
