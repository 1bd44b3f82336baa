import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import type { InferenceSession } from 'onnxruntime-node';
import { createError } from '../errors.js';
import { encodeInPasses } from './encode-passes.js';
import { encoderPrefix, LazyModel, onnxRuntime, openSession, paddedInputs, positiveInt } from './onnx-embedder.js';
import type { Reranker } from './reranker.js';
import { loadTokenizer, onnxFileOf, readJson } from './sentence-transformer-embedder.js';

/**
 * A reranker the user brings: a cross-encoder (a BERT-style model with a one-label classification
 * head, e.g. cross-encoder/ms-marco-MiniLM-L-6-v2) exported to ONNX in the layout transformers.js
 * reads (`config.json`, `tokenizer.json`, `onnx/model.onnx` or a quantized one), pointed at by
 * MEMORYPOOL_RERANKER_DIR. Each pair is tokenized as the model's own pair template says
 * ([CLS] query [SEP] passage [SEP], token types 0 then 1 for BERT), truncated longest first as
 * the Python tokenizers do, and its `logits` [batch, 1] read.
 */

export interface CrossEncoderOptions {
  modelDir: string;
  /** `int8` runs a quantized file when the folder has one (as for an encoder you bring), else the float one. */
  precision?: 'fp32' | 'int8';
  intraOpThreads?: number;
  batchSize?: number;
  batchTokens?: number;
}

export interface CrossEncoderLayout {
  modelDir: string;
  modelFile: string;
  /** Tokens of a pair, special tokens included: the position table's size, at most 512. */
  maxTokens: number;
  modelId: string;
}

const MAX_PAIR_TOKENS = 512;

/** What the folder says, read at construction: a folder that is not a cross-encoder export fails here, at the start. */
export function readRerankerLayout(options: CrossEncoderOptions): CrossEncoderLayout {
  const modelDir = path.resolve(options.modelDir);
  if (!existsSync(modelDir) || !statSync(modelDir).isDirectory()) throw unavailable(`${modelDir} is not a folder`);
  const modelFile = onnxFileOf(modelDir, options.precision);
  const missing = [...['config.json', 'tokenizer.json'].filter((f) => !existsSync(path.join(modelDir, f))), ...(modelFile ? [] : ['onnx/model.onnx'])];
  if (missing.length > 0 || !modelFile) throw unavailable(`the cross-encoder in ${modelDir} is incomplete: ${missing.join(', ')} not found`);
  const config = readJson(path.join(modelDir, 'config.json'), 'RERANKER_UNAVAILABLE') as { max_position_embeddings?: number; _name_or_path?: string; id2label?: Record<string, string> };
  const labels = config.id2label === undefined ? 1 : Object.keys(config.id2label).length;
  if (labels !== 1) throw unavailable(`${modelDir}/config.json has ${labels} labels; a reranker gives one relevance logit per pair (num_labels 1)`);
  const maxTokens = positiveInt('max_position_embeddings', Math.min(MAX_PAIR_TOKENS, config.max_position_embeddings ?? MAX_PAIR_TOKENS));
  const name = (config._name_or_path || path.basename(modelDir)).replace(/[^\w./-]+/g, '_');
  return { modelDir, modelFile, maxTokens, modelId: `cross-encoder:${name}:${path.basename(modelFile, '.onnx')}` };
}

/** What is used of a transformers.js tokenizer: its pieces, its pair template and its ids. */
interface PairTokenizer {
  _encode_text(text: string): string[];
  post_processor: ((tokens: string[], pair: string[] | null, options: { add_special_tokens: boolean }) => { tokens: string[]; token_type_ids?: number[] }) | null;
  model: { convert_tokens_to_ids(tokens: string[]): number[] };
  pad_token_id?: number;
}

interface Loaded {
  session: InferenceSession;
  Tensor: typeof import('onnxruntime-node').Tensor;
  tokenizer: PairTokenizer;
  tokenTypes: boolean;
  /** Special tokens the pair template adds ([CLS], [SEP], [SEP]: 3 for BERT). */
  specials: number;
}

/** One pair as the graph reads it. */
interface Pair {
  ids: number[];
  types: number[];
}

export class CrossEncoder implements Reranker {
  readonly modelId: string;
  readonly layout: CrossEncoderLayout;
  private readonly intraOpThreads: number | undefined;
  private readonly batchSize: number;
  private readonly batchTokens: number;
  private readonly model = new LazyModel(() => this.loadModel());

  constructor(options: CrossEncoderOptions) {
    this.layout = readRerankerLayout(options);
    this.modelId = this.layout.modelId;
    this.intraOpThreads = options.intraOpThreads === undefined ? undefined : positiveInt('intraOpThreads', options.intraOpThreads);
    this.batchSize = positiveInt('batchSize', options.batchSize ?? 64);
    this.batchTokens = positiveInt('batchTokens', options.batchTokens ?? 4096);
  }

  ready(): Promise<void> {
    return this.model.get().then(() => undefined);
  }

  async score(query: string, passages: readonly string[]): Promise<Float32Array> {
    const loaded = await this.model.get();
    if (passages.length === 0) return new Float32Array(0);
    const queryTokens = loaded.tokenizer._encode_text(encoderPrefix(query));
    const pairs = passages.map((passage) => this.pair(loaded, queryTokens, loaded.tokenizer._encode_text(encoderPrefix(passage))));
    // Rows go to the graph by reference: each row's token types are found again by its ids.
    const typesOf = new Map<number[], number[]>(pairs.map((pair) => [pair.ids, pair.types]));
    const logits = await encodeInPasses(
      pairs.map((pair) => pair.ids),
      { batchSize: this.batchSize, batchTokens: this.batchTokens, closed: () => this.model.closed },
      (batch) => this.run(loaded, batch, typesOf),
    );
    return Float32Array.from(logits, (logit) => logit[0]!);
  }

  close(): Promise<void> {
    return this.model.close();
  }

  /** The pair's ids and token types: truncated longest first (the longer side loses a token at a time, the passage on ties), then templated. */
  private pair({ tokenizer, specials }: Loaded, query: readonly string[], passage: readonly string[]): Pair {
    const budget = Math.max(2, this.layout.maxTokens - specials);
    let q = query.length;
    let p = passage.length;
    while (q + p > budget) {
      if (q > p) q--;
      else p--;
    }
    const templated = tokenizer.post_processor!([...query.slice(0, q)], [...passage.slice(0, p)], { add_special_tokens: true });
    const ids = tokenizer.model.convert_tokens_to_ids(templated.tokens);
    return { ids, types: templated.token_type_ids ?? new Array<number>(ids.length).fill(0) };
  }

  private async loadModel(): Promise<Loaded> {
    const { modelDir, modelFile } = this.layout;
    const tokenizer = await loadTokenizer<PairTokenizer>(modelDir, 'RERANKER_UNAVAILABLE');
    if (typeof tokenizer.post_processor !== 'function') throw unavailable(`${modelDir}/tokenizer.json has no post_processor: the pair template ([CLS] query [SEP] passage [SEP]) is not known`);
    const ort = await onnxRuntime();
    let session: InferenceSession;
    try {
      session = await openSession(path.join(modelDir, modelFile), this.intraOpThreads, 'is it a cross-encoder exported to ONNX?');
    } catch (cause) {
      throw unavailable((cause as Error).message, cause);
    }
    const missing = ['input_ids', 'attention_mask'].filter((input) => !session.inputNames.includes(input));
    if (missing.length > 0 || !session.outputNames.includes('logits')) {
      throw unavailable(
        `${path.join(modelDir, modelFile)} has inputs [${session.inputNames.join(', ')}] and outputs [${session.outputNames.join(', ')}]; a cross-encoder needs input_ids and attention_mask in, logits out`,
      );
    }
    const specials = tokenizer.post_processor([], [], { add_special_tokens: true }).tokens.length;
    return { session, Tensor: ort.Tensor, tokenizer, tokenTypes: session.inputNames.includes('token_type_ids'), specials };
  }

  private async run({ session, Tensor, tokenizer, tokenTypes }: Loaded, batch: number[][], typesOf: Map<number[], number[]>): Promise<Float32Array[]> {
    const { inputIds, mask, seq } = paddedInputs(batch, tokenizer.pad_token_id ?? 0);
    const dims = [batch.length, seq];
    const feeds: Record<string, InstanceType<typeof Tensor>> = { input_ids: new Tensor('int64', inputIds, dims), attention_mask: new Tensor('int64', mask, dims) };
    if (tokenTypes) {
      const types = new BigInt64Array(batch.length * seq);
      batch.forEach((ids, row) => typesOf.get(ids)!.forEach((type, col) => (types[row * seq + col] = BigInt(type))));
      feeds.token_type_ids = new Tensor('int64', types, dims);
    }
    const result = (await session.run(feeds, ['logits'])).logits!;
    if (result.dims.join(',') !== `${batch.length},1`) throw unavailable(`the model's logits have dims [${result.dims.join(', ')}], expected [${batch.length}, 1]`);
    const data = result.data as Float32Array;
    return batch.map((_, row) => data.subarray(row, row + 1));
  }
}

function unavailable(detail: string, cause?: unknown) {
  return createError('RERANKER_UNAVAILABLE', `MEMORYPOOL_RERANKER_DIR: ${detail}`, cause === undefined ? undefined : { cause });
}
