import { DEFAULT_ENCODER_THREADS, DEFAULT_MODEL_PRECISION } from '../src/config.js';
import { OnnxEmbedder } from '../src/embedding/onnx-embedder.js';

/**
 * The encoder exactly as the server runs it with the bench's environment (every MEMORYPOOL_*
 * variable dropped): its default precision and threads. Constructing it loads nothing, so its
 * `modelId` is also what the bench writes into stores the server must not re-embed.
 */
export function serverEncoder(): OnnxEmbedder {
  return new OnnxEmbedder({ precision: DEFAULT_MODEL_PRECISION, intraOpThreads: DEFAULT_ENCODER_THREADS });
}
