import { DEFAULT_ENCODER_THREADS, DEFAULT_MODEL_PRECISION } from '../src/config.js';
import { OnnxEmbedder, type ModelPrecision } from '../src/embedding/onnx-embedder.js';

/**
 * The model build the bench's servers run: the default unless `--precision` asks for the other.
 * One setting for the whole run, so that the bare encoder, the stores the bench writes and the
 * servers it spawns always agree (a store written for another model would be re-embedded at start).
 */
let precision: ModelPrecision = DEFAULT_MODEL_PRECISION;

export function useBenchPrecision(value: ModelPrecision): void {
  precision = value;
}

export function benchPrecision(): ModelPrecision {
  return precision;
}

/**
 * The encoder exactly as the server runs it with the bench's environment (every MEMORYPOOL_*
 * variable dropped but the bench's own): its precision and default threads. Constructing it loads
 * nothing, so its `modelId` is also what the bench writes into stores the server must not re-embed.
 */
export function serverEncoder(): OnnxEmbedder {
  return new OnnxEmbedder({ precision, intraOpThreads: DEFAULT_ENCODER_THREADS });
}
