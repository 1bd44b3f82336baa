import type { Config } from '../config.js';
import { DEFAULT_ENCODER_THREADS, DEFAULT_MODEL_PRECISION, defaultEncoderWorkers } from '../config.js';
import { BROUGHT_ENCODER_DENSE_WEIGHT, DEFAULT_RETRIEVAL_WEIGHTS, type RetrievalWeights } from '../retrieval/retrieval-config.js';
import { BatchingEmbedder } from './batching-embedder.js';
import { EncoderPool } from './encoder-pool.js';
import type { Embedder } from './embedder.js';
import { HashEmbedder } from './hash-embedder.js';
import { HttpEmbedder } from './http-embedder.js';
import { QueryVectorCache } from './query-vector-cache.js';
import { isSentenceTransformerDir } from './sentence-transformer-embedder.js';
import { WorkerEmbedder } from './worker-embedder.js';

type EmbedderConfig = Pick<Config, 'embedder' | 'modelDir' | 'embedderUrl' | 'embedderModel' | 'embedderDimensions' | 'embedderApiKey'> &
  Partial<Pick<Config, 'modelPrecision' | 'encoderThreads' | 'encoderWorkers' | 'pooling' | 'queryPrefix' | 'documentPrefix'>>;

export function createEmbedder(config: EmbedderConfig): Embedder {
  switch (config.embedder) {
    case 'hash':
      return new HashEmbedder({ dimensions: config.embedderDimensions });
    case 'http':
      if (!config.embedderUrl || !config.embedderModel || !config.embedderDimensions) {
        throw new Error('The http embedder needs MEMORYPOOL_EMBEDDER_URL, MEMORYPOOL_EMBEDDER_MODEL and MEMORYPOOL_EMBEDDER_DIMENSIONS');
      }
      return new QueryVectorCache(
        new BatchingEmbedder(new HttpEmbedder({ baseUrl: config.embedderUrl, model: config.embedderModel, dimensions: config.embedderDimensions, apiKey: config.embedderApiKey })),
      );
    case 'onnx':
      return new QueryVectorCache(localEncoderStack(config));
  }
}

/**
 * The fusion's dense share for the configured encoder: MEMORYPOOL_DENSE_WEIGHT when set, else
 * more for a sentence-transformers model the user brought than for USE-lite (retrieval-config.ts).
 */
export function encoderDenseWeight(config: Pick<Config, 'embedder' | 'modelDir' | 'denseWeight'>): number {
  if (config.denseWeight !== undefined) return config.denseWeight;
  const brought = config.embedder === 'onnx' && config.modelDir !== undefined && isSentenceTransformerDir(config.modelDir);
  return brought ? BROUGHT_ENCODER_DENSE_WEIGHT : DEFAULT_RETRIEVAL_WEIGHTS.denseWeight;
}

/**
 * The local encoder as the server runs it: up to `encoderWorkers` copies on threads of their own
 * (one at the start, more as ingest needs them: encoder-pool.ts), fed runs pooled across callers,
 * queries first, as many runs out at once as there are copies running.
 */
export function localEncoderStack(config: Omit<EmbedderConfig, 'embedder' | 'embedderUrl' | 'embedderModel' | 'embedderDimensions' | 'embedderApiKey'>): BatchingEmbedder {
  const options = {
    modelDir: config.modelDir,
    precision: config.modelPrecision ?? DEFAULT_MODEL_PRECISION,
    intraOpThreads: config.encoderThreads ?? DEFAULT_ENCODER_THREADS,
    pooling: config.pooling,
    queryPrefix: config.queryPrefix,
    documentPrefix: config.documentPrefix,
  };
  const copies = Array.from({ length: config.encoderWorkers ?? defaultEncoderWorkers() }, () => new WorkerEmbedder(options));
  const pool = new EncoderPool(copies);
  // A brought model may read up to 512 tokens a text: runs are sized by what it reads, so a
  // query still waits behind about 2k tokens of ingest work, not four times that.
  return new BatchingEmbedder(pool, { tokensPerTextMax: copies[0].maxTokens, maxInFlight: () => pool.running });
}

/** The retrieval weights a server or a command takes from its configuration (the rest are the defaults). */
export function serviceWeights(config: Pick<Config, 'embedder' | 'modelDir' | 'denseWeight' | 'exhaustiveLimit'>): Partial<RetrievalWeights> {
  return { denseWeight: encoderDenseWeight(config), ...(config.exhaustiveLimit === undefined ? {} : { exhaustiveLimit: config.exhaustiveLimit }) };
}
