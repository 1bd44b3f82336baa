import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { mulberry32 } from '../../bench/workload.js';
import { FLOAT, GraphBuilder, INT64 } from '../../scripts/model/onnx-builder.js';
import { CLS_ID, HIDDEN, SEP_ID, tinyBertTokenizerJson, tinyBertWeights, VOCAB, type TinyBertWeights } from './tiny-bert.js';

/**
 * A tiny cross-encoder exported to ONNX, built by the tests because no real one can be downloaded
 * here: a BERT-shaped graph with a one-label classification head, in the layout `optimum-cli
 * export onnx` writes for a MiniLM cross-encoder (input_ids, attention_mask, token_type_ids in;
 * logits [batch, 1] out; the tiny BERT's WordPiece tokenizer.json, whose pair template is
 * [CLS] query [SEP] passage [SEP] with token types 0 then 1). Random weights; the graph is
 *
 *   logit = head · mean over real tokens of tanh((word[id] + type[t]) · W) + bias
 *
 * so a test can compute every expected logit from `weights` itself (`expectedLogit`).
 */

export interface TinyCrossEncoderWeights extends TinyBertWeights {
  head: Float32Array; // [hidden]
  bias: number;
}

export function tinyCrossEncoderWeights(seed = 11): TinyCrossEncoderWeights {
  const next = mulberry32(seed + 1);
  // Large enough that logits spread over several units: sigmoid then tells the pairs apart.
  return { ...tinyBertWeights(seed), head: Float32Array.from({ length: HIDDEN }, () => 8 * (next() - 0.5)), bias: 0.25 };
}

/** The logit of one pair of WordPiece token ids (no special tokens), as the graph computes it within float rounding. */
export function expectedLogit(weights: TinyCrossEncoderWeights, query: readonly number[], passage: readonly number[]): number {
  const ids = [CLS_ID, ...query, SEP_ID, ...passage, SEP_ID];
  const types = ids.map((_, i) => (i <= query.length + 1 ? 0 : 1));
  const pooled = new Float64Array(HIDDEN);
  ids.forEach((id, t) => {
    const x = Array.from({ length: HIDDEN }, (_, i) => weights.word[id * HIDDEN + i]! + weights.type[types[t]! * HIDDEN + i]!);
    for (let j = 0; j < HIDDEN; j++) pooled[j] += Math.tanh(x.reduce((sum, xi, i) => sum + xi * weights.w[i * HIDDEN + j]!, 0)) / ids.length;
  });
  return pooled.reduce((sum, value, j) => sum + value * weights.head[j]!, weights.bias);
}

/** The id the tokenizer gives a token of the test vocabulary (a word that is also a letter, "a", "i", is the word's: tokenizer.json's vocab keeps the last). */
export function tokenId(token: string): number {
  const at = VOCAB.lastIndexOf(token);
  if (at < 0) throw new Error(`${token} is not in the test vocabulary`);
  return at;
}

/** Writes the model folder into `dir` (created) and returns the weights it holds. */
export async function writeTinyCrossEncoder(dir: string, options: { seed?: number; quantizedOnly?: boolean } = {}): Promise<TinyCrossEncoderWeights> {
  const weights = tinyCrossEncoderWeights(options.seed);
  const g = new GraphBuilder();
  const ids = g.input('input_ids', INT64, ['batch', 'sequence']);
  const mask = g.input('attention_mask', INT64, ['batch', 'sequence']);
  const types = g.input('token_type_ids', INT64, ['batch', 'sequence']);
  const words = g.op('Gather', [g.floatTensor('word_embeddings', [VOCAB.length, HIDDEN], weights.word), ids], { axis: 0 });
  const typed = g.op('Gather', [g.floatTensor('token_type_embeddings', [2, HIDDEN], weights.type), types], { axis: 0 });
  const states = g.op('Tanh', [g.op('MatMul', [g.op('Add', [words, typed]), g.floatTensor('dense', [HIDDEN, HIDDEN], weights.w)])]);
  const real = g.op('Cast', [mask], { to: FLOAT });
  const summed = g.op('ReduceSum', [g.op('Mul', [states, g.op('Unsqueeze', [real, g.ints('axis2', [2])])]), g.ints('axis1', [1])], { keepdims: 0 });
  const pooled = g.op('Div', [summed, g.op('ReduceSum', [real, g.ints('axis1b', [1])], { keepdims: 1 })]);
  const logits = g.op('Add', [g.op('MatMul', [pooled, g.floatTensor('classifier', [HIDDEN, 1], weights.head)]), g.floatTensor('classifier_bias', [1], Float32Array.of(weights.bias))]);
  g.output(logits, 'logits', FLOAT, ['batch', 1]);
  const onnx = g.encode({ graphName: 'tiny-cross-encoder', opset: 13, producer: 'memorypool-tests', docString: 'random weights', metadata: {} });

  await mkdir(path.join(dir, 'onnx'), { recursive: true });
  const json = (file: string, value: unknown) => writeFile(path.join(dir, file), JSON.stringify(value, null, 2));
  await writeFile(path.join(dir, 'onnx', options.quantizedOnly ? 'model_quantized.onnx' : 'model.onnx'), onnx);
  await json('config.json', {
    _name_or_path: 'tiny-cross-encoder',
    architectures: ['BertForSequenceClassification'],
    model_type: 'bert',
    hidden_size: HIDDEN,
    vocab_size: VOCAB.length,
    max_position_embeddings: 64,
    id2label: { 0: 'LABEL_0' },
    label2id: { LABEL_0: 0 },
  });
  await json('tokenizer_config.json', { tokenizer_class: 'BertTokenizer', do_lower_case: true, model_max_length: 512, cls_token: '[CLS]', sep_token: '[SEP]', pad_token: '[PAD]', unk_token: '[UNK]', mask_token: '[MASK]' });
  await json('tokenizer.json', tinyBertTokenizerJson());
  return weights;
}
