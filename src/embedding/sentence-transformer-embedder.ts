import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import { createError } from '../errors.js';
import type { EmbedOptions, Embedder } from './embedder.js';
import { encodeInPasses } from './encode-passes.js';
import { assertEncodable, LazyModel, normalise, onnxRuntime, openSession, paddedInputs, positiveInt } from './onnx-embedder.js';

/**
 * An encoder the user brings: a sentence-transformers model exported to ONNX in the layout
 * transformers.js reads (`config.json`, `tokenizer.json`, `onnx/model.onnx` or a quantized one),
 * pointed at by MEMORYPOOL_MODEL_DIR. Nothing is downloaded: the tokenizer is built from the
 * folder's tokenizer.json by transformers.js, the graph runs through onnxruntime-node.
 *
 * Pooling comes from the folder as sentence-transformers saved it (`1_Pooling/config.json`),
 * unless `pooling` overrides it. Vectors are always L2-normalised after pooling, whether or not
 * `modules.json` lists a Normalize module: memorypool scores by cosine everywhere (the HNSW space,
 * the previous-turn blend), which is also sentence-transformers' own default similarity.
 */

export type Pooling = 'mean' | 'cls' | 'max' | 'lasttoken';
export const POOLINGS: readonly Pooling[] = ['mean', 'cls', 'max', 'lasttoken'];

export interface SentenceTransformerOptions {
  modelDir: string;
  /** `int8` runs a quantized file when the folder has one (onnx/model_quantized.onnx, model_int8.onnx), else the float one. */
  precision?: 'fp32' | 'int8';
  /** Overrides the folder's 1_Pooling/config.json. Default: the folder's, else mean. */
  pooling?: Pooling;
  /** Put before every search query, e.g. e5's "query: ". Not part of the model id: stored vectors do not depend on it. */
  queryPrefix?: string;
  /** Put before every stored text, e.g. e5's "passage: ". Part of the model id: changing it re-embeds. */
  documentPrefix?: string;
  batchSize?: number;
  batchTokens?: number;
  intraOpThreads?: number;
}

/** Files a quantized export goes by (transformers.js's name first), tried in order for `int8`. */
const QUANTIZED_FILES = ['onnx/model_quantized.onnx', 'onnx/model_int8.onnx', 'onnx/model_qint8.onnx'];
const FLOAT_FILE = 'onnx/model.onnx';
const DEFAULT_MAX_TOKENS = 512;

/** What the model folder says, read once at construction (identity) and again by the thread that loads it. */
export interface SentenceTransformerLayout {
  modelDir: string;
  modelFile: string;
  dimensions: number;
  pooling: Pooling;
  maxTokens: number;
  modelId: string;
}

/** A folder holding a model memorypool did not build: config.json without USE-lite's `memorypool` stamp. */
export function isSentenceTransformerDir(modelDir: string): boolean {
  const file = path.join(modelDir, 'config.json');
  if (!existsSync(file)) return false;
  return (readJson(file) as { memorypool?: unknown }).memorypool === undefined;
}

export function readLayout(options: SentenceTransformerOptions): SentenceTransformerLayout {
  const modelDir = path.resolve(options.modelDir);
  const missing = ['config.json', 'tokenizer.json'].filter((f) => !existsSync(path.join(modelDir, f)));
  const modelFile = onnxFileOf(modelDir, options.precision);
  if (!modelFile) missing.push(FLOAT_FILE);
  if (missing.length > 0 || !modelFile) throw createError('EMBEDDER_UNAVAILABLE', `The model in ${modelDir} is incomplete: ${missing.join(', ')} not found`);
  const config = readJson(path.join(modelDir, 'config.json')) as { hidden_size?: number; d_model?: number; max_position_embeddings?: number; _name_or_path?: string };
  const dimensions = config.hidden_size ?? config.d_model;
  if (!Number.isInteger(dimensions) || dimensions! < 1) throw createError('EMBEDDER_UNAVAILABLE', `${modelDir}/config.json has no hidden_size`);

  const poolingFile = path.join(modelDir, '1_Pooling', 'config.json');
  const pooling = options.pooling ?? (existsSync(poolingFile) ? poolingOf(readJson(poolingFile) as PoolingConfig, poolingFile) : 'mean');
  if (!POOLINGS.includes(pooling)) throw new RangeError(`pooling must be one of ${POOLINGS.join(', ')}, got ${String(pooling)}`);

  // sentence-transformers reads max_seq_length, not the position table's size (often 512 against 128-256 trained).
  const stConfigFile = path.join(modelDir, 'sentence_bert_config.json');
  const maxSeq = existsSync(stConfigFile) ? (readJson(stConfigFile) as { max_seq_length?: number }).max_seq_length : undefined;
  const maxTokens = Math.min(maxSeq ?? DEFAULT_MAX_TOKENS, config.max_position_embeddings ?? Infinity);

  // Whatever decides the stored vectors: the files that shape them (not the weights' bytes, only
  // their size: hashing a gigabyte at every start is too slow), the pooling and the document prefix.
  const hash = createHash('sha256');
  for (const file of ['config.json', 'tokenizer.json', 'tokenizer_config.json', 'modules.json', '1_Pooling/config.json', 'sentence_bert_config.json']) {
    const full = path.join(modelDir, file);
    hash.update(`${file}\0${existsSync(full) ? readFileSync(full) : ''}\0`);
  }
  hash.update(`${modelFile}\0${statSync(path.join(modelDir, modelFile)).size}\0${pooling}\0${maxTokens}\0${options.documentPrefix ?? ''}`);
  const name = (config._name_or_path || path.basename(modelDir)).replace(/[^\w./-]+/g, '_');
  const modelId = `st-onnx:${name}:${path.basename(modelFile, '.onnx')}#${hash.digest('hex').slice(0, 12)}`;
  return { modelDir, modelFile, dimensions: dimensions!, pooling, maxTokens: positiveInt('max_seq_length', maxTokens), modelId };
}

/** The ONNX file a transformers.js layout holds for this precision (`int8`: a quantized one when there is one), or undefined. */
export function onnxFileOf(modelDir: string, precision: 'fp32' | 'int8' | undefined): string | undefined {
  const wanted = precision === 'int8' ? [...QUANTIZED_FILES, FLOAT_FILE] : [FLOAT_FILE];
  return wanted.find((f) => existsSync(path.join(modelDir, f)));
}

interface PoolingConfig {
  pooling_mode_cls_token?: boolean;
  pooling_mode_mean_tokens?: boolean;
  pooling_mode_max_tokens?: boolean;
  pooling_mode_lasttoken?: boolean;
  pooling_mode_mean_sqrt_len_tokens?: boolean;
}

/** The one pooling mode the folder's 1_Pooling/config.json turns on (several concatenated are not supported). */
function poolingOf(config: PoolingConfig, file: string): Pooling {
  const on: Pooling[] = [];
  if (config.pooling_mode_cls_token) on.push('cls');
  if (config.pooling_mode_mean_tokens) on.push('mean');
  if (config.pooling_mode_max_tokens) on.push('max');
  if (config.pooling_mode_lasttoken) on.push('lasttoken');
  if (on.length !== 1 || config.pooling_mode_mean_sqrt_len_tokens) {
    throw createError('EMBEDDER_UNAVAILABLE', `${file} turns on ${on.length === 0 ? 'no supported pooling mode' : on.join(' + ')}; memorypool pools one way (set MEMORYPOOL_POOLING to choose)`);
  }
  return on[0]!;
}

export interface Tokenizer {
  encode(text: string): number[];
  all_special_ids: number[];
  pad_token_id?: number;
}

interface Loaded {
  session: InferenceSession;
  Tensor: typeof import('onnxruntime-node').Tensor;
  tokenizer: Tokenizer;
  output: string;
  /** The graph already pools (a `sentence_embedding` output): its vector is used as is. */
  pooled: boolean;
  tokenTypes: boolean;
}

export class SentenceTransformerEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions: number;
  readonly layout: SentenceTransformerLayout;
  private readonly queryPrefix: string;
  private readonly documentPrefix: string;
  private readonly batchSize: number;
  private readonly batchTokens: number;
  private readonly intraOpThreads: number | undefined;
  private readonly model = new LazyModel(() => this.loadModel());

  constructor(options: SentenceTransformerOptions) {
    this.layout = readLayout(options);
    this.modelId = this.layout.modelId;
    this.dimensions = this.layout.dimensions;
    this.queryPrefix = options.queryPrefix ?? '';
    this.documentPrefix = options.documentPrefix ?? '';
    this.batchSize = positiveInt('batchSize', options.batchSize ?? 64);
    this.batchTokens = positiveInt('batchTokens', options.batchTokens ?? 2048);
    this.intraOpThreads = options.intraOpThreads === undefined ? undefined : positiveInt('intraOpThreads', options.intraOpThreads);
  }

  ready(): Promise<void> {
    return this.model.get().then(() => undefined);
  }

  /** `priority: 'query'` marks search queries, which get the query prefix; everything else is a stored text. */
  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    assertEncodable(texts, 'SentenceTransformerEmbedder');
    const loaded = await this.model.get();
    if (texts.length === 0) return [];
    const prefix = options.priority === 'query' ? this.queryPrefix : this.documentPrefix;
    const ids = texts.map((text) => truncated(loaded.tokenizer, loaded.tokenizer.encode(prefix + text), this.layout.maxTokens));
    return encodeInPasses(ids, { batchSize: this.batchSize, batchTokens: this.batchTokens, closed: () => this.model.closed }, (batch) => this.run(loaded, batch));
  }

  close(): Promise<void> {
    return this.model.close();
  }

  private async loadModel(): Promise<Loaded> {
    const { modelDir, modelFile } = this.layout;
    const tokenizer = await loadTokenizer<Tokenizer>(modelDir);
    const ort = await onnxRuntime();
    const session = await openSession(path.join(modelDir, modelFile), this.intraOpThreads, 'is it a sentence-transformers model exported to ONNX?');
    const missingInputs = ['input_ids', 'attention_mask'].filter((name) => !session.inputNames.includes(name));
    const pooled = session.outputNames.includes('sentence_embedding');
    const output = pooled ? 'sentence_embedding' : session.outputNames.includes('last_hidden_state') ? 'last_hidden_state' : undefined;
    if (missingInputs.length > 0 || !output) {
      throw createError(
        'EMBEDDER_UNAVAILABLE',
        `${path.join(modelDir, modelFile)} has inputs [${session.inputNames.join(', ')}] and outputs [${session.outputNames.join(', ')}]; an encoder needs input_ids and attention_mask in, last_hidden_state or sentence_embedding out`,
      );
    }
    return { session, Tensor: ort.Tensor, tokenizer, output, pooled, tokenTypes: session.inputNames.includes('token_type_ids') };
  }

  private async run({ session, Tensor, tokenizer, output, pooled, tokenTypes }: Loaded, batch: number[][]): Promise<Float32Array[]> {
    const { inputIds, mask, seq } = paddedInputs(batch, tokenizer.pad_token_id ?? 0);
    const dims = [batch.length, seq];
    const feeds: Record<string, InstanceType<typeof Tensor>> = { input_ids: new Tensor('int64', inputIds, dims), attention_mask: new Tensor('int64', mask, dims) };
    // One segment: every token type is 0.
    if (tokenTypes) feeds.token_type_ids = new Tensor('int64', new BigInt64Array(batch.length * seq), dims);
    const result = (await session.run(feeds, [output]))[output]!;
    const hidden = this.dimensions;
    const expected = pooled ? [batch.length, hidden] : [batch.length, seq, hidden];
    if (result.dims.join(',') !== expected.join(',')) {
      throw createError('EMBEDDER_UNAVAILABLE', `The model's ${output} has dims [${result.dims.join(', ')}], expected [${expected.join(', ')}] (hidden_size ${hidden} from config.json)`);
    }
    const data = result.data as Float32Array;
    if (pooled) return batch.map((_, row) => normalise(data.slice(row * hidden, (row + 1) * hidden)));
    return batch.map((ids, row) => normalise(pool(data.subarray(row * seq * hidden, (row + 1) * seq * hidden), ids.length, hidden, this.layout.pooling)));
  }
}

/**
 * One text's vector from its [seq, hidden] token states, of which the first `tokens` are real
 * (the rest padding, right-aligned, never pooled).
 */
export function pool(states: Float32Array, tokens: number, hidden: number, pooling: Pooling): Float32Array {
  if (pooling === 'cls') return states.slice(0, hidden);
  if (pooling === 'lasttoken') return states.slice((tokens - 1) * hidden, tokens * hidden);
  const out = new Float32Array(hidden).fill(pooling === 'max' ? -Infinity : 0);
  for (let t = 0; t < tokens; t++) {
    const at = t * hidden;
    if (pooling === 'max') for (let i = 0; i < hidden; i++) out[i] = Math.max(out[i]!, states[at + i]!);
    else for (let i = 0; i < hidden; i++) out[i]! += states[at + i]!;
  }
  if (pooling === 'mean') for (let i = 0; i < hidden; i++) out[i]! /= tokens;
  return out;
}

/**
 * The first `maxTokens` ids, keeping the closing special token ([SEP], </s>) the way the Python
 * tokenizers truncate (transformers.js's own truncation cuts it off).
 */
function truncated(tokenizer: Tokenizer, ids: number[], maxTokens: number): number[] {
  if (ids.length <= maxTokens) return ids;
  const last = ids[ids.length - 1]!;
  return tokenizer.all_special_ids.includes(last) ? [...ids.slice(0, maxTokens - 1), last] : ids.slice(0, maxTokens);
}

/** The folder's tokenizer (tokenizer.json, tokenizer_config.json) as transformers.js builds it; `code` is the error a failure reports. */
export async function loadTokenizer<T>(modelDir: string, code: 'EMBEDDER_UNAVAILABLE' | 'RERANKER_UNAVAILABLE' = 'EMBEDDER_UNAVAILABLE'): Promise<T> {
  const tokenizerConfigFile = path.join(modelDir, 'tokenizer_config.json');
  const tokenizerConfig = existsSync(tokenizerConfigFile) ? readJson(tokenizerConfigFile, code) : {};
  // The tokenizers module alone: transformers.js's index also loads its image code (sharp).
  const { AutoTokenizer } = await tokenizers(code);
  const className = String((tokenizerConfig as { tokenizer_class?: string }).tokenizer_class ?? 'PreTrainedTokenizer').replace(/Fast$/, '');
  const TokenizerClass = AutoTokenizer.TOKENIZER_CLASS_MAPPING[className] ?? AutoTokenizer.TOKENIZER_CLASS_MAPPING.PreTrainedTokenizer!;
  try {
    return new TokenizerClass(readJson(path.join(modelDir, 'tokenizer.json'), code), tokenizerConfig) as T;
  } catch (cause) {
    throw createError(code, `${modelDir}/tokenizer.json could not be read: ${(cause as Error).message}`, { cause });
  }
}

export function readJson(file: string, code: 'EMBEDDER_UNAVAILABLE' | 'RERANKER_UNAVAILABLE' = 'EMBEDDER_UNAVAILABLE'): unknown {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as unknown;
  } catch (cause) {
    throw createError(code, `${file} is not valid JSON: ${(cause as Error).message}`, { cause });
  }
}

type TokenizersModule = { AutoTokenizer: { TOKENIZER_CLASS_MAPPING: Record<string, new (json: unknown, config: unknown) => unknown> } };

/**
 * transformers.js' tokenizers module alone: its index also loads its image code (sharp). It is an
 * optional peer dependency, needed only for a model the user brings (the built-in encoder has its
 * own tokenizer), so an app that never brings one does not install sharp and its install script.
 */
async function tokenizers(code: 'EMBEDDER_UNAVAILABLE' | 'RERANKER_UNAVAILABLE'): Promise<TokenizersModule> {
  try {
    return (await import('@xenova/transformers/src/tokenizers.js' as string)) as TokenizersModule;
  } catch (cause) {
    const missing = (cause as NodeJS.ErrnoException).code;
    if (missing !== 'ERR_MODULE_NOT_FOUND' && missing !== 'MODULE_NOT_FOUND') throw cause;
    throw createError(
      code,
      'A model you bring (MEMORYPOOL_MODEL_DIR, MEMORYPOOL_RERANKER_DIR) is tokenized by @xenova/transformers, which is not installed: `npm install @xenova/transformers@2.17.2` in your app',
      { cause },
    );
  }
}
