import type { Embedder } from './embedder.js';
import { OnnxEmbedder, type OnnxEmbedderOptions } from './onnx-embedder.js';
import { isSentenceTransformerDir, SentenceTransformerEmbedder, type SentenceTransformerOptions } from './sentence-transformer-embedder.js';

/** The local encoder's settings: USE-lite's, plus those of a sentence-transformers model the user brings. */
export type LocalEncoderOptions = OnnxEmbedderOptions & Omit<Partial<SentenceTransformerOptions>, 'modelDir'>;

/**
 * The encoder in `modelDir`: USE-lite as build-model writes it (its config.json carries the
 * `memorypool` stamp), else a sentence-transformers ONNX export. Constructing loads nothing but
 * the small JSON files that give the model's identity.
 */
export function createLocalEncoder(options: LocalEncoderOptions): Embedder {
  if (options.modelDir !== undefined && isSentenceTransformerDir(options.modelDir)) return new SentenceTransformerEmbedder({ ...options, modelDir: options.modelDir });
  return new OnnxEmbedder(options);
}
