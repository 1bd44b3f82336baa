/**
 * tokenizer.json / tokenizer_config.json for transformers.js that reproduce the ids of the
 * original USE-lite tokenizer (@energetic-ai/embeddings, a port of tfjs-models'): NFKC, then "▁"
 * prepended and every space replaced by "▁", then Viterbi over the SentencePiece scores with
 * unknown characters mapped (and consecutive ones fused) to id 0.
 */

export const SPACE = '\u2581';
/** Ids below this are reserved pieces the original tokenizer never emits from text. */
const RESERVED = 6;
/**
 * The original keeps reserved pieces (`<s>`, `</s>`, `extra_token_id_*`) out of its trie, so text
 * such as "<s>" is spelt with ordinary pieces. transformers.js matches every vocab entry, so those
 * entries get a prefix that cannot survive NFKC (U+2126 OHM SIGN normalises to U+03A9) and can
 * therefore never match normalised text. Their ids stay where they are.
 */
const UNREACHABLE_PREFIX = '\u2126';

export type Vocab = [string, number][];

export function checkVocab(vocab: unknown, embeddingRows: number): Vocab {
  if (!Array.isArray(vocab) || vocab.length === 0) throw new Error('vocab.json is not a non-empty array');
  const v: Vocab = vocab.map((entry: unknown, i): [string, number] => {
    if (!Array.isArray(entry) || typeof entry[0] !== 'string' || (typeof entry[1] !== 'number' && entry[1] !== null)) {
      throw new Error(`vocab.json entry ${i} is not [piece, score]`);
    }
    // A few pieces (":" and smileys) have a null score. The original adds scores with `+`, where
    // null counts as 0, so 0 it is; transformers.js would otherwise carry the null through.
    return [entry[0], entry[1] ?? 0];
  });
  if (v[0]![0] !== '\uFFFD' || v[1]![0] !== '<s>' || v[2]![0] !== '</s>') {
    throw new Error('vocab.json does not start with the expected reserved pieces (�, <s>, </s>)');
  }
  if (v.length > embeddingRows) throw new Error(`vocab has ${v.length} pieces but the embedding table only ${embeddingRows} rows`);
  return v;
}

export function tokenizerJson(vocab: Vocab): object {
  const pieces = vocab.map(([piece, score], id): [string, number] =>
    id > 0 && id < RESERVED ? [`${UNREACHABLE_PREFIX}${piece}`, score] : [piece, score],
  );
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    // The original always prefixes "▁", even when the text already starts with a space, so the
    // prefix is a Prepend normalizer; Metaspace's own add_prefix_space skips it in that case.
    normalizer: {
      type: 'Sequence',
      normalizers: [{ type: 'NFKC' }, { type: 'Prepend', prepend: SPACE }],
    },
    pre_tokenizer: {
      type: 'Metaspace',
      replacement: SPACE,
      str_rep: SPACE,
      add_prefix_space: false,
      prepend_scheme: 'never',
      split: false,
    },
    post_processor: null,
    decoder: { type: 'Metaspace', replacement: SPACE, add_prefix_space: true, prepend_scheme: 'always', split: false },
    model: { type: 'Unigram', unk_id: 0, vocab: pieces, byte_fallback: false },
  };
}

export function tokenizerConfigJson(maxTokens: number): object {
  return {
    tokenizer_class: 'PreTrainedTokenizer',
    // Truncation cuts here: the TF graph drops positions >= maxTokens anyway.
    model_max_length: maxTokens,
    unk_token: '\uFFFD',
    // Padding is masked by attention_mask in the graph; id 0 keeps the Gather in range.
    pad_token: '\uFFFD',
    padding_side: 'right',
    clean_up_tokenization_spaces: false,
  };
}
