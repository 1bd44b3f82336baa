import { existsSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { PreTrainedModel, Tensor } from '@xenova/transformers';
import { createError } from '../errors.js';
import type { Embedder } from './embedder.js';

/**
 * The default embedder: Universal Sentence Encoder lite, converted to ONNX at install time by
 * scripts/build-model.ts and run through @xenova/transformers (onnxruntime-node), fully offline.
 *
 * Tokenization is done here rather than by transformers.js's Unigram tokenizer: the original
 * tokenizer (tfjs-models' port of SentencePiece) breaks score ties the other way and has a
 * start-of-text quirk, so runs such as "!!!!!!!" or a leading ":)" would get different ids. This
 * class reproduces it exactly, so vectors match the original TF.js model.
 */

/** Must equal MODEL_FORMAT in scripts/build-model.ts; part of modelId so a change forces re-embedding. */
const MODEL_FORMAT = 1;
const MODEL_NAME = 'use-lite';
const DIMENSIONS = 512;
const DEFAULT_BATCH_SIZE = 64;
const REQUIRED_FILES = ['config.json', 'tokenizer.json', 'onnx/model.onnx'];

export interface OnnxEmbedderOptions {
  /** Directory holding config.json, tokenizer.json and onnx/model.onnx. Default: <package>/models/use-lite. */
  modelDir?: string;
  /** Texts per forward pass. Default 64. */
  batchSize?: number;
}

export class OnnxEmbedder implements Embedder {
  readonly modelId = `use-lite-onnx@${MODEL_FORMAT}`;
  readonly dimensions = DIMENSIONS;
  readonly modelDir: string;
  private readonly batchSize: number;
  private loading: Promise<Loaded> | null = null;
  private closed = false;

  constructor(options: OnnxEmbedderOptions = {}) {
    this.modelDir = path.resolve(options.modelDir ?? path.join(packageRoot(), 'models', MODEL_NAME));
    const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer, got ${batchSize}`);
    this.batchSize = batchSize;
  }

  ready(): Promise<void> {
    return this.load().then(() => undefined);
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    texts.forEach((text, i) => {
      if (typeof text !== 'string' || text.trim().length === 0) {
        throw new RangeError(`OnnxEmbedder.embed: text ${i} is empty or whitespace-only; callers must not send such texts`);
      }
    });
    const loaded = await this.load();
    const { tokenizer, maxTokens } = loaded;
    if (texts.length === 0) return [];

    const ids = texts.map((t) => tokenizer.encode(t).slice(0, maxTokens));
    // Sorting all texts by token count (not only within a batch) puts similar lengths together, so
    // little compute goes to padding; `out` restores input order.
    const order = ids.map((_, i) => i).sort((a, b) => ids[a]!.length - ids[b]!.length);
    const out = new Array<Float32Array>(texts.length);
    for (let start = 0; start < order.length; start += this.batchSize) {
      if (start > 0) await new Promise<void>((resolve) => setImmediate(resolve)); // let the server breathe
      if (this.closed) throw createError('EMBEDDER_UNAVAILABLE', 'OnnxEmbedder was closed');
      const batch = order.slice(start, start + this.batchSize);
      const vectors = await runBatch(loaded, batch.map((i) => ids[i]!));
      batch.forEach((textIndex, row) => {
        out[textIndex] = vectors[row]!;
      });
    }
    return out;
  }

  async close(): Promise<void> {
    this.closed = true;
    const loading = this.loading;
    this.loading = null;
    if (!loading) return;
    try {
      await (await loading).model.dispose();
    } catch {
      // A model that failed to load has nothing to release.
    }
  }

  private load(): Promise<Loaded> {
    if (this.closed) return Promise.reject(createError('EMBEDDER_UNAVAILABLE', 'OnnxEmbedder was closed'));
    if (!this.loading) {
      const loading = loadSerially(this.modelDir);
      this.loading = loading;
      // A failed load is not cached: the files may be built later (npm run build:model).
      loading.catch(() => {
        if (this.loading === loading) this.loading = null;
      });
    }
    return this.loading;
  }
}

interface Loaded {
  model: PreTrainedModel;
  Tensor: typeof Tensor;
  tokenizer: UseLiteTokenizer;
  maxTokens: number;
}

let loadQueue: Promise<unknown> = Promise.resolve();

/**
 * transformers.js reads its model path from a process-wide `env`, so two embedders with different
 * model directories must not load at the same time.
 */
function loadSerially(modelDir: string): Promise<Loaded> {
  const next = loadQueue.then(() => loadModel(modelDir));
  loadQueue = next.catch(() => undefined);
  return next;
}

async function loadModel(modelDir: string): Promise<Loaded> {
  const missing = REQUIRED_FILES.filter((f) => !existsSync(path.join(modelDir, f)));
  if (missing.length > 0) {
    throw createError(
      'EMBEDDER_UNAVAILABLE',
      `The local embedding model is missing (${missing.join(', ')} not found in ${modelDir}); run \`npm run build:model\` to build it`,
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

  // Imported on first use: loading onnxruntime costs time that tests using other embedders skip.
  const { AutoModel, Tensor, env } = await import('@xenova/transformers');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  // transformers.js resolves `<localModelPath><name>/...`; the trailing separator matters.
  env.localModelPath = `${path.dirname(modelDir)}${path.sep}`;
  let model: PreTrainedModel;
  try {
    model = await AutoModel.from_pretrained(path.basename(modelDir), { quantized: false, local_files_only: true });
  } catch (cause) {
    throw createError('EMBEDDER_UNAVAILABLE', `Could not load the ONNX model from ${modelDir}: ${(cause as Error).message}; run \`npm run build:model\``, { cause });
  }
  return { model, Tensor, tokenizer: new UseLiteTokenizer(vocab), maxTokens: config.max_position_embeddings ?? 128 };
}

async function runBatch({ model, Tensor }: Loaded, batch: number[][]): Promise<Float32Array[]> {
  const seq = Math.max(...batch.map((ids) => ids.length));
  const inputIds = new BigInt64Array(batch.length * seq); // pads with id 0, masked out below
  const mask = new BigInt64Array(batch.length * seq);
  batch.forEach((ids, row) => {
    ids.forEach((id, col) => {
      inputIds[row * seq + col] = BigInt(id);
      mask[row * seq + col] = 1n;
    });
  });
  const dims = [batch.length, seq];
  const output = (await model({
    input_ids: new Tensor('int64', inputIds, dims),
    attention_mask: new Tensor('int64', mask, dims),
  })) as Record<string, { data: Float32Array; dims: number[] } | undefined>;
  const sentence = output.sentence_embedding;
  if (!sentence || sentence.dims[1] !== DIMENSIONS) throw createError('EMBEDDER_UNAVAILABLE', 'The ONNX model has no sentence_embedding output; run `npm run build:model`');
  // The graph already L2-normalises; renormalising in float32 here only guards the contract.
  return batch.map((_, row) => normalise(sentence.data.slice(row * DIMENSIONS, (row + 1) * DIMENSIONS)));
}

function normalise(v: Float32Array): Float32Array {
  let sq = 0;
  for (const x of v) sq += x * x;
  const norm = Math.sqrt(sq);
  if (norm > 0) for (let i = 0; i < v.length; i++) v[i]! /= norm;
  return v;
}

let cachedRoot: string | null = null;

/** The nearest folder with a package.json above this file: the same from src (tsx) and dist/src. */
function packageRoot(): string {
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
