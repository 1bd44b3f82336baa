import { DEFAULT_ENCODER_THREADS, DEFAULT_MODEL_PRECISION, defaultEncoderWorkers } from '../src/config.js';
import { localEncoderStack } from '../src/embedding/create-embedder.js';
import type { Embedder } from '../src/embedding/embedder.js';
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

/** Server processes the bench's servers run (`--processes`; MEMORYPOOL_PROCESSES): the default, one, unless asked. */
let processes = 1;

export function useBenchProcesses(value: number): void {
  processes = value;
}

export function benchProcesses(): number {
  return processes;
}

/** Service threads the bench's servers run (`--threads`; MEMORYPOOL_THREADS): the default, none, unless asked. */
let threads = 0;

export function useBenchThreads(value: number): void {
  threads = value;
}

export function benchThreads(): number {
  return threads;
}

/**
 * The encoder exactly as the server runs it with the bench's environment (every MEMORYPOOL_*
 * variable dropped but the bench's own): its precision and default threads. Constructing it loads
 * nothing, so its `modelId` is also what the bench writes into stores the server must not re-embed.
 */
export function serverEncoder(): OnnxEmbedder {
  return new OnnxEmbedder({ precision, intraOpThreads: DEFAULT_ENCODER_THREADS });
}

/**
 * Threads the server's encoder runs on, over all its processes (the bench's, unless a phase runs
 * a server of its own with another count; MEMORYPOOL_ENCODER_WORKERS is
 * dropped from its environment: the default, which shares the cores out among the processes).
 */
export function serverEncoderThreads(serverProcesses = processes): number {
  return serverProcesses * defaultEncoderWorkers(serverProcesses);
}

/**
 * The server's whole encoder as it runs there: `serverEncoderThreads()` copies on threads of their
 * own, fed pooled runs (create-embedder.ts). What the Add phase is compared with: the same threads
 * as the server, without HTTP, records or the store.
 */
export function serverEncoderStack(): Embedder {
  return localEncoderStack({ modelPrecision: precision, encoderWorkers: serverEncoderThreads() });
}
