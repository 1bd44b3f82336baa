import type { Config } from '../config.js';
import { DEFAULT_ENCODER_THREADS, DEFAULT_MODEL_PRECISION } from '../config.js';
import type { Reranker } from './reranker.js';
import { WorkerReranker } from './worker-reranker.js';

/**
 * The reranker MEMORYPOOL_RERANKER_DIR names, on a thread of its own, or null when none is set
 * (then nothing loads). A folder that is not a cross-encoder export throws RERANKER_UNAVAILABLE
 * here, before anything else starts; its model loads on the thread (`ready()`).
 */
export function createReranker(config: Partial<Pick<Config, 'rerankerDir' | 'modelPrecision' | 'encoderThreads'>>): Reranker | null {
  if (config.rerankerDir === undefined) return null;
  return new WorkerReranker({
    modelDir: config.rerankerDir,
    precision: config.modelPrecision ?? DEFAULT_MODEL_PRECISION,
    intraOpThreads: config.encoderThreads ?? DEFAULT_ENCODER_THREADS,
  });
}
