import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { mulberry32 } from '../../bench/workload.js';
import { FLOAT, GraphBuilder, INT64 } from '../../scripts/model/onnx-builder.js';

/**
 * A tiny BERT-shaped sentence-transformers ONNX export, built by the tests because no real model
 * can be downloaded here: random weights, but the layout, inputs and outputs of an export
 * (input_ids, attention_mask, token_type_ids in; last_hidden_state [batch, seq, hidden] out) and a
 * real WordPiece tokenizer.json. The graph is state = tanh((word[id] + type[t]) · W), so a test
 * can compute every expected vector from `weights` itself.
 */

export const HIDDEN = 16;
const SPECIAL = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'];
const WORDS = (
  'the a an i my you your we he she it they is are was were be have has had do did not and or but of to in on at for with from by ' +
  'about what when where who why how this that these those there here dog dogs cat puppy walk run jump swim play like love hate ' +
  'went go going come came see saw say said tell told ask asked time day week month year today yesterday tomorrow morning night ' +
  'hello world sister brother mother father friend paris london city trip travel book read write music song guitar piano ' +
  'query passage work job office home house car bike park beach mountain lake river food dinner lunch coffee tea cake pizza ' +
  'birthday party school class teacher student one two three four five may june july'
).split(' ');
const PIECES = ['##s', '##ed', '##ing', '##er', '##ly', '##y'];
const PUNCTUATION = [...'.,!?:;\'"-()'];
const LETTERS = [...'abcdefghijklmnopqrstuvwxyz0123456789'];

/** Every token in id order. */
export const VOCAB: readonly string[] = [...SPECIAL, ...PUNCTUATION, ...LETTERS, ...LETTERS.map((c) => `##${c}`), ...PIECES, ...WORDS];
export const CLS_ID = 2;
export const SEP_ID = 3;

export interface TinyBertWeights {
  word: Float32Array; // [vocab, hidden]
  type: Float32Array; // [2, hidden]
  w: Float32Array; // [hidden, hidden]
}

/** Seeded, so every build of the model is the same. */
export function tinyBertWeights(seed = 7): TinyBertWeights {
  const next = mulberry32(seed);
  const fill = (n: number) => Float32Array.from({ length: n }, () => next() - 0.5);
  return { word: fill(VOCAB.length * HIDDEN), type: fill(2 * HIDDEN), w: fill(HIDDEN * HIDDEN) };
}

/** The graph's output for one row of ids (all of token type 0): [ids.length × HIDDEN], as float32 maths would give it within rounding. */
export function tokenStates(weights: TinyBertWeights, ids: readonly number[]): Float32Array[] {
  return ids.map((id) => {
    const x = Array.from({ length: HIDDEN }, (_, i) => weights.word[id * HIDDEN + i]! + weights.type[i]!);
    return Float32Array.from({ length: HIDDEN }, (_, j) => Math.tanh(x.reduce((sum, xi, i) => sum + xi * weights.w[i * HIDDEN + j]!, 0)));
  });
}

export interface TinyBertOptions {
  pooling?: 'mean' | 'cls';
  maxSeqLength?: number;
  seed?: number;
  name?: string;
}

/** Writes the model folder into `dir` (created) and returns the weights it holds. */
export async function writeTinyBert(dir: string, options: TinyBertOptions = {}): Promise<TinyBertWeights> {
  const weights = tinyBertWeights(options.seed);
  const g = new GraphBuilder();
  const ids = g.input('input_ids', INT64, ['batch', 'sequence']);
  g.input('attention_mask', INT64, ['batch', 'sequence']);
  const types = g.input('token_type_ids', INT64, ['batch', 'sequence']);
  const words = g.op('Gather', [g.floatTensor('word_embeddings', [VOCAB.length, HIDDEN], weights.word), ids], { axis: 0 });
  const typed = g.op('Gather', [g.floatTensor('token_type_embeddings', [2, HIDDEN], weights.type), types], { axis: 0 });
  const states = g.op('Tanh', [g.op('MatMul', [g.op('Add', [words, typed]), g.floatTensor('dense', [HIDDEN, HIDDEN], weights.w)])]);
  g.output(states, 'last_hidden_state', FLOAT, ['batch', 'sequence', HIDDEN]);
  const onnx = g.encode({ graphName: 'tiny-bert', opset: 13, producer: 'memorypool-tests', docString: 'random weights', metadata: {} });

  await mkdir(path.join(dir, 'onnx'), { recursive: true });
  await mkdir(path.join(dir, '1_Pooling'), { recursive: true });
  const json = (file: string, value: unknown) => writeFile(path.join(dir, file), JSON.stringify(value, null, 2));
  await writeFile(path.join(dir, 'onnx', 'model.onnx'), onnx);
  await json('config.json', { _name_or_path: options.name ?? 'tiny-bert', architectures: ['BertModel'], model_type: 'bert', hidden_size: HIDDEN, vocab_size: VOCAB.length, max_position_embeddings: 64 });
  await json('modules.json', [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
  ]);
  await json('1_Pooling/config.json', {
    word_embedding_dimension: HIDDEN,
    pooling_mode_cls_token: options.pooling === 'cls',
    pooling_mode_mean_tokens: options.pooling !== 'cls',
    pooling_mode_max_tokens: false,
    pooling_mode_mean_sqrt_len_tokens: false,
  });
  await json('sentence_bert_config.json', { max_seq_length: options.maxSeqLength ?? 32, do_lower_case: false });
  await json('tokenizer_config.json', { tokenizer_class: 'BertTokenizer', do_lower_case: true, model_max_length: 512, cls_token: '[CLS]', sep_token: '[SEP]', pad_token: '[PAD]', unk_token: '[UNK]', mask_token: '[MASK]' });
  await json('tokenizer.json', tinyBertTokenizerJson());
  return weights;
}

/** A BERT WordPiece tokenizer.json (uncased) as the tokenizers library writes it. */
export function tinyBertTokenizerJson(): unknown {
  const special = (token: string) => ({ SpecialToken: { id: token, type_id: 0 } });
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL.map((content, id) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true })),
    normalizer: { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase: true },
    pre_tokenizer: { type: 'BertPreTokenizer' },
    post_processor: {
      type: 'TemplateProcessing',
      single: [special('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, special('[SEP]')],
      pair: [special('[CLS]'), { Sequence: { id: 'A', type_id: 0 } }, special('[SEP]'), { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: '[SEP]', type_id: 1 } }],
      special_tokens: {
        '[CLS]': { id: '[CLS]', ids: [CLS_ID], tokens: ['[CLS]'] },
        '[SEP]': { id: '[SEP]', ids: [SEP_ID], tokens: ['[SEP]'] },
      },
    },
    decoder: { type: 'WordPiece', prefix: '##', cleanup: true },
    model: {
      type: 'WordPiece',
      unk_token: '[UNK]',
      continuing_subword_prefix: '##',
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(VOCAB.map((token, id) => [token, id])),
    },
  };
}
