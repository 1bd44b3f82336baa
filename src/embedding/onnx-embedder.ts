import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InferenceSession } from 'onnxruntime-node';
import { createError } from '../errors.js';
import type { Embedder } from './embedder.js';
import { encodeInPasses } from './encode-passes.js';

/**
 * The default embedder: Universal Sentence Encoder lite, converted to ONNX at install time by
 * scripts/build-model.ts (a float model and an int8 one) and run through onnxruntime-node,
 * fully offline.
 *
 * Tokenization is done here rather than by a generic Unigram tokenizer: the original tokenizer
 * (tfjs-models' port of SentencePiece) breaks score ties the other way and has a start-of-text
 * quirk, so runs such as "!!!!!!!" or a leading ":)" would get different ids. This class
 * reproduces it exactly, so vectors match the original TF.js model.
 *
 * The session is created here, not through @xenova/transformers, so that its settings (threads)
 * are ours and a run fetches only the sentence vector, not the [batch, seq, 512] broadcast the
 * graph also outputs for transformers.js's pipeline.
 */

/**
 * Must equal MODEL_FORMAT in scripts/build-model.ts; part of modelId so a change forces re-embedding.
 * 2: the vector is L2-normalised here from the graph's UNNORMALISED_OUTPUT (1 took the graph's own).
 * 3: each layer norm is one LayerNormalization kernel and the query scale is in the QKV weights.
 */
const MODEL_FORMAT = 3;
/**
 * The int8 build's own version: 2 had unsigned 8-bit weights; 3 quantizes activations per row, so
 * a text's vector no longer depends on its batch; 4 does the same through onnxruntime's fused
 * kernels, whose rounding differs in the last bits; 5 takes fixed, calibrated activation scales
 * (and a scale per row in layer 0's QKV, a float tanh layer), as fast as the per-call build
 * (scripts/model/quantize-int8.ts).
 */
const INT8_FORMAT = 5;
/** The graph's sentence vector before L2 normalisation, which runBatch does (see use-lite-onnx.ts). */
export const UNNORMALISED_OUTPUT = 'sentence_tanh';
const MODEL_NAME = 'use-lite';
const DIMENSIONS = 512;
const DEFAULT_BATCH_SIZE = 64;
/**
 * Padded tokens (rows × longest row) per forward pass. A pass cannot be interrupted, so this
 * bounds how long a query waits behind ingest work already on the encoder; past about 2k tokens
 * larger passes are no faster per token.
 */
const DEFAULT_BATCH_TOKENS = 2048;

export type ModelPrecision = 'fp32' | 'int8';
export const MODEL_PRECISIONS: readonly ModelPrecision[] = ['fp32', 'int8'];
/** The ONNX file of each precision inside the model directory; build-model writes both. */
export const MODEL_FILES: Record<ModelPrecision, string> = { fp32: 'onnx/model.onnx', int8: 'onnx/model_int8.onnx' };

/**
 * The encoder reads at most 128 tokens; no token takes more than a few characters, so it never
 * needs more than the first 4,096 characters of a text. Cutting there first keeps a 7 MB text
 * as cheap to tokenize as a short one. (A text whose first 4,096 characters are one run of
 * unknown characters is the only kind whose tokens this changes: such a run is one token.)
 */
export const MAX_TEXT_CHARS = 4096;

export interface OnnxEmbedderOptions {
  /** Directory holding config.json, tokenizer.json and the ONNX files. Default: <package>/models/use-lite. */
  modelDir?: string;
  /** Which build of the model to run. Default fp32. */
  precision?: ModelPrecision;
  /** Most texts per forward pass. Default 64. */
  batchSize?: number;
  /** Most padded tokens (rows × longest) per forward pass. Default 2048. */
  batchTokens?: number;
  /** onnxruntime intra-op threads; unset lets onnxruntime use every core. */
  intraOpThreads?: number;
}

/**
 * A first, shorter cut tried before MAX_TEXT_CHARS: English runs about 4 characters a token, so
 * 1,024 characters usually hold well over 128 tokens and tokenizing them costs a quarter.
 */
const FIRST_CUT_CHARS = 1024;
/** Tokens past maxTokens a cut must yield to be used: the segmentation near a cut may differ. */
const CUT_MARGIN_TOKENS = 16;

/** The start of `text` the encoder can read: at most `limit` chars, never half a surrogate pair. */
export function encoderPrefix(text: string, limit = MAX_TEXT_CHARS): string {
  if (text.length <= limit) return text;
  const cut = text.charCodeAt(limit - 1) >= 0xd800 && text.charCodeAt(limit - 1) <= 0xdbff ? limit - 1 : limit;
  return text.slice(0, cut);
}

export class OnnxEmbedder implements Embedder {
  readonly modelId: string;
  readonly dimensions = DIMENSIONS;
  readonly modelDir: string;
  readonly precision: ModelPrecision;
  private readonly batchSize: number;
  private readonly batchTokens: number;
  private readonly intraOpThreads: number | undefined;
  private readonly model: LazyModel<Loaded>;

  constructor(options: OnnxEmbedderOptions = {}) {
    this.modelDir = path.resolve(options.modelDir ?? path.join(packageRoot(), 'models', MODEL_NAME));
    this.precision = options.precision ?? 'fp32';
    if (!MODEL_PRECISIONS.includes(this.precision)) throw new RangeError(`precision must be one of ${MODEL_PRECISIONS.join(', ')}, got ${String(this.precision)}`);
    // The int8 model's vectors differ slightly from the float model's, so stored vectors of one
    // must not be searched with queries of the other: a precision change re-embeds.
    this.modelId = this.precision === 'fp32' ? `use-lite-onnx@${MODEL_FORMAT}` : `use-lite-onnx-${this.precision}@${INT8_FORMAT}`;
    this.batchSize = positiveInt('batchSize', options.batchSize ?? DEFAULT_BATCH_SIZE);
    this.batchTokens = positiveInt('batchTokens', options.batchTokens ?? DEFAULT_BATCH_TOKENS);
    this.intraOpThreads = options.intraOpThreads === undefined ? undefined : positiveInt('intraOpThreads', options.intraOpThreads);
    this.model = new LazyModel(() => loadModel(this.modelDir, this.precision, this.intraOpThreads));
  }

  ready(): Promise<void> {
    return this.model.get().then(() => undefined);
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    assertEncodable(texts, 'OnnxEmbedder');
    const loaded = await this.model.get();
    const { tokenizer, maxTokens } = loaded;
    if (texts.length === 0) return [];
    const ids = texts.map((t) => encodeIds(tokenizer, t, maxTokens));
    return encodeInPasses(ids, { batchSize: this.batchSize, batchTokens: this.batchTokens, closed: () => this.model.closed }, (batch) => runBatch(loaded, batch));
  }

  close(): Promise<void> {
    return this.model.close();
  }
}

/** A model loaded on first use, once; a failed load is not kept (the files may be built or fixed later). */
export class LazyModel<T> {
  private loading: Promise<T> | null = null;
  closed = false;

  constructor(private readonly loadModel: () => Promise<T>) {}

  get(): Promise<T> {
    if (this.closed) return Promise.reject(createError('EMBEDDER_UNAVAILABLE', 'The embedder was closed'));
    if (!this.loading) {
      const loading = this.loadModel();
      this.loading = loading;
      loading.catch(() => {
        if (this.loading === loading) this.loading = null;
      });
    }
    return this.loading;
  }

  async close(): Promise<void> {
    this.closed = true;
    const loading = this.loading;
    this.loading = null;
    // onnxruntime-node 1.14 has no release(): the native session goes with its last reference.
    await loading?.catch(() => undefined);
  }
}

/** The first maxTokens ids of `text`, tokenizing no more of it than that needs. */
function encodeIds(tokenizer: UseLiteTokenizer, text: string, maxTokens: number): number[] {
  const first = encoderPrefix(text, FIRST_CUT_CHARS);
  if (first.length < text.length) {
    const ids = tokenizer.encode(first);
    if (ids.length >= maxTokens + CUT_MARGIN_TOKENS) return ids.slice(0, maxTokens);
  }
  return tokenizer.encode(encoderPrefix(text)).slice(0, maxTokens);
}

export function positiveInt(name: string, value: number): number {
  if (!Number.isInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
}

/** Callers never send empty texts (see Embedder.embed): a model fails on zero tokens. */
export function assertEncodable(texts: readonly string[], embedder: string): void {
  texts.forEach((text, i) => {
    // /\S/ stops at the first visible character; trim() would copy a 7 MB text.
    if (typeof text !== 'string' || !/\S/.test(text)) {
      throw new RangeError(`${embedder}.embed: text ${i} is empty or whitespace-only; callers must not send such texts`);
    }
  });
}

/**
 * onnxruntime-node, imported on first use: loading it costs time that tests using other embedders
 * skip. CommonJS whose named exports Node cannot detect statically: under plain Node only
 * `default` holds them; loaders with their own interop (tsx, vitest) may hand them over directly.
 */
export async function onnxRuntime(): Promise<typeof import('onnxruntime-node')> {
  const imported = (await import('onnxruntime-node')) as typeof import('onnxruntime-node') & { default?: typeof import('onnxruntime-node') };
  return imported.default ?? imported;
}

/** A session with our settings: every graph optimisation, sequential, `intraOpThreads` threads. */
export async function openSession(file: string, intraOpThreads: number | undefined, hint: string): Promise<InferenceSession> {
  const ort = await onnxRuntime();
  try {
    return await ort.InferenceSession.create(file, {
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
      ...(intraOpThreads === undefined ? {} : { intraOpNumThreads: intraOpThreads }),
    });
  } catch (cause) {
    throw createError('EMBEDDER_UNAVAILABLE', `Could not load the ONNX model from ${file}: ${(cause as Error).message}; ${hint}`, { cause });
  }
}

interface Loaded {
  session: InferenceSession;
  Tensor: typeof import('onnxruntime-node').Tensor;
  tokenizer: UseLiteTokenizer;
  maxTokens: number;
}

async function loadModel(modelDir: string, precision: ModelPrecision, intraOpThreads: number | undefined): Promise<Loaded> {
  const modelFile = MODEL_FILES[precision];
  const missing = ['config.json', 'tokenizer.json', modelFile].filter((f) => !existsSync(path.join(modelDir, f)));
  if (missing.length > 0) {
    throw createError(
      'EMBEDDER_UNAVAILABLE',
      `The local embedding model is missing (${missing.join(', ')} not found in ${modelDir}); ${buildHint()}`,
    );
  }
  const config = JSON.parse(await readFile(path.join(modelDir, 'config.json'), 'utf8')) as {
    max_position_embeddings?: number;
    memorypool?: { format?: number };
  };
  if (config.memorypool?.format !== MODEL_FORMAT) {
    throw createError(
      'EMBEDDER_UNAVAILABLE',
      `The model in ${modelDir} has format ${String(config.memorypool?.format)}, this code needs ${MODEL_FORMAT}; run \`npm run build:model\` to rebuild it`,
    );
  }
  const tokenizerJson = JSON.parse(await readFile(path.join(modelDir, 'tokenizer.json'), 'utf8')) as { model?: { vocab?: [string, number][] } };
  const vocab = tokenizerJson.model?.vocab;
  if (!Array.isArray(vocab)) throw createError('EMBEDDER_UNAVAILABLE', `${modelDir}/tokenizer.json has no Unigram vocab; run \`npm run build:model\``);

  const ort = await onnxRuntime();
  const session = await openSession(path.join(modelDir, modelFile), intraOpThreads, 'run `npm run build:model`');
  if (!session.outputNames.includes(UNNORMALISED_OUTPUT)) {
    throw createError('EMBEDDER_UNAVAILABLE', `The ONNX model has no ${UNNORMALISED_OUTPUT} output; run \`npm run build:model\``);
  }
  return { session, Tensor: ort.Tensor, tokenizer: new UseLiteTokenizer(vocab), maxTokens: config.max_position_embeddings ?? 128 };
}

/** A pass's rows as int64 [rows, longest] ids (padded with `padId` on the right) and their attention mask. */
export function paddedInputs(batch: readonly number[][], padId: number): { inputIds: BigInt64Array; mask: BigInt64Array; seq: number } {
  const seq = Math.max(...batch.map((ids) => ids.length));
  const inputIds = new BigInt64Array(batch.length * seq);
  if (padId !== 0) inputIds.fill(BigInt(padId));
  const mask = new BigInt64Array(batch.length * seq);
  batch.forEach((ids, row) => {
    ids.forEach((id, col) => {
      inputIds[row * seq + col] = BigInt(id);
      mask[row * seq + col] = 1n;
    });
  });
  return { inputIds, mask, seq };
}

async function runBatch({ session, Tensor }: Loaded, batch: number[][]): Promise<Float32Array[]> {
  const { inputIds, mask, seq } = paddedInputs(batch, 0); // padding is masked out
  const dims = [batch.length, seq];
  const output = await session.run(
    { input_ids: new Tensor('int64', inputIds, dims), attention_mask: new Tensor('int64', mask, dims) },
    [UNNORMALISED_OUTPUT],
  );
  const sentence = output[UNNORMALISED_OUTPUT];
  if (!sentence || sentence.dims[1] !== DIMENSIONS) throw createError('EMBEDDER_UNAVAILABLE', `The ONNX model has no ${UNNORMALISED_OUTPUT} output; run \`npm run build:model\``);
  const data = sentence.data as Float32Array;
  // Normalised here, row by row in one fixed order, so that a row's vector is the same whatever
  // else the pass held (the graph's own normalisation is not: see use-lite-onnx.ts).
  return batch.map((_, row) => normalise(data.slice(row * DIMENSIONS, (row + 1) * DIMENSIONS)));
}

export function normalise(v: Float32Array): Float32Array {
  let sq = 0;
  for (const x of v) sq += x * x;
  const norm = Math.sqrt(sq);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}

/**
 * What to do about a missing model: a clone builds it (`prepare` does, at install); an installed
 * package has no build script or build dependencies, since the model ships inside it (`files`).
 */
function buildHint(): string {
  let clone = false;
  try {
    clone = existsSync(path.join(packageRoot(), 'scripts', 'build-model.ts'));
  } catch {
    clone = false;
  }
  return clone
    ? 'run `npm run build:model` to build it'
    : 'the memorypool package ships it in models/use-lite, so this install is incomplete: reinstall memorypool (or set MEMORYPOOL_MODEL_DIR to a model folder)';
}

let cachedRoot: string | null = null;

/** The nearest folder with a package.json above this file: the same from src (tsx) and dist/src. */
export function packageRoot(): string {
  if (cachedRoot) return cachedRoot;
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = path.join(dir, 'package.json');
    if (existsSync(candidate) && (JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string }).name === 'memorypool') break;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`OnnxEmbedder: no memorypool package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
  cachedRoot = dir;
  return dir;
}

// ---------------------------------------------------------------------------------------------
// Tokenizer

const SPACE = '\u2581';
/** Ids 0-5 (�, <s>, </s>, extra_token_id_1..3) are never produced from text by the original. */
const RESERVED = 6;
const UNK_ID = 0;

interface TrieNode {
  children: Map<string, TrieNode>;
  id: number; // -1 when no piece ends here
  score: number;
}

/**
 * A line-for-line equivalent of the tokenizer in @energetic-ai/embeddings (from tfjs-models'
 * universal-sentence-encoder), including its quirks, because those decide the ids the model was
 * used with: a cumulative score of exactly 0 counts as "unset" (so zero-score pieces such as "▁:)"
 * lose at the start of a text), ties go to the candidate starting last, unknown characters score 0
 * and consecutive unknowns collapse into one id 0. Lengths are in code points, except the
 * backtrace step, which uses the piece's UTF-16 length as the original does (no piece in this
 * vocabulary has astral characters, so the two agree).
 */
export class UseLiteTokenizer {
  private readonly root: TrieNode = { children: new Map(), id: -1, score: 0 };
  private readonly pieceLength: number[];

  constructor(vocab: readonly (readonly [string, number | null])[]) {
    // max(1, …) only guards against an empty piece looping the backtrace forever.
    this.pieceLength = vocab.map(([piece], id) => (id === UNK_ID ? 1 : Math.max(1, piece.length)));
    for (let id = RESERVED; id < vocab.length; id++) {
      const [piece, score] = vocab[id]!;
      let node = this.root;
      for (const ch of piece) {
        let next = node.children.get(ch);
        if (!next) {
          next = { children: new Map(), id: -1, score: 0 };
          node.children.set(ch, next);
        }
        node = next;
      }
      node.id = id;
      node.score = score ?? 0;
    }
  }

  encode(text: string): number[] {
    const normalized = text.normalize('NFKC');
    if (normalized.length === 0) return [];
    const symbols = Array.from(SPACE + normalized.replaceAll(' ', SPACE));
    const n = symbols.length;

    // Candidates ending at each position, in increasing start order (the original's for..in order).
    const ending: { start: number; id: number; score: number }[][] = Array.from({ length: n + 1 }, () => []);
    for (let i = 0; i < n; i++) {
      let node = this.root.children.get(symbols[i]!);
      let found = false;
      for (let j = i; j < n && node; j++) {
        if (node.id >= 0) {
          ending[j + 1]!.push({ start: i, id: node.id, score: node.score });
          found = true;
        }
        node = j + 1 < n ? node.children.get(symbols[j + 1]!) : undefined;
      }
      if (!found) ending[i + 1]!.push({ start: i, id: UNK_ID, score: 0 });
    }

    const best = new Array<number>(n + 1).fill(0);
    const words = new Array<number>(n + 1).fill(UNK_ID);
    for (let end = 0; end <= n; end++) {
      for (const c of ending[end]!) {
        const score = c.score + best[c.start]!;
        if (best[end] === 0 || score >= best[end]!) {
          best[end] = score;
          words[end] = c.id;
        }
      }
    }

    const reversed: number[] = [];
    for (let at = n; at > 0; at -= this.pieceLength[words[at]!]!) reversed.push(words[at]!);
    const ids: number[] = [];
    let previousUnk = false;
    for (const id of reversed) {
      if (!(previousUnk && id === UNK_ID)) ids.push(id);
      previousUnk = id === UNK_ID;
    }
    return ids.reverse();
  }
}
