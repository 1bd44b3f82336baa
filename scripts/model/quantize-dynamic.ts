import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';

const { onnx } = onnxProto;
const DT = onnx.TensorProto.DataType;

/**
 * Dynamic int8 quantization of an ONNX model's weight matmuls, the rewrite onnxruntime's Python
 * `quantize_dynamic` does (which is not installable here), with one change: activations are
 * quantized per row (per token), not per call. Every MatMul whose right operand is a 2-D float
 * initializer becomes
 *
 *   s = max(|A| over the last axis, tiny) / 127          (one scale per row of A)
 *   A_q = Cast<uint8>(Clip(Round(A / s) + 128, 0, 255))
 *   MatMulInteger(A_q, W_q, 128, W_zp) → Cast(float) → Mul(s) → Mul(W_scale)
 *
 * with W quantized once, here, per output column and symmetrically (below). Matmuls of two
 * activations (attention) stay float.
 *
 * Why per row: `DynamicQuantizeLinear` takes one scale over its whole input, i.e. over every text
 * of a batch and their padding, so a text's vector depended on what it was encoded with (cosine
 * 0.9995 to itself encoded alone, components off by up to 8e-3). With a scale per row, each
 * token's row is quantized from its own values only, the integer product is exact, and the
 * rescale is element-wise, so a text's vector is the same in any batch. The scale is symmetric
 * (zero point 128 for every row) because onnxruntime's MatMulInteger takes one zero point for A.
 *
 * Weights are unsigned 8-bit around a zero point of 128 (±127), per column. Signed int8 weights
 * would send onnxruntime to its u8×s8 kernels, which on CPUs without VNNI sum pairs of products
 * into saturating int16s and so need weights cut to 7 bits (its `reduce_range`); u8×u8 has no
 * such step, so the full 8 bits give the same vectors on every x86 CPU.
 */
const WEIGHT_MAX = 127;
const WEIGHT_ZERO_POINT = 128;
/** Activations use the same symmetric grid: ±127 around 128. */
const ACTIVATION_MAX = 127;
const ACTIVATION_ZERO_POINT = 128;
/** The smallest row scale: an all-zero row (padding) divides by this instead of by 0 and stays 0. */
const MIN_ROW_ABS_MAX = 1e-30;

export interface QuantizeReport {
  matmuls: number;
}

export function quantizeDynamic(modelBytes: Uint8Array): { bytes: Uint8Array; report: QuantizeReport } {
  const model = onnx.ModelProto.decode(modelBytes);
  const graph = model.graph!;
  const initializers = new Map<string, OnnxTypes.ITensorProto>();
  for (const init of graph.initializer ?? []) initializers.set(init.name!, init);
  const consumers = new Map<string, number>();
  for (const node of graph.node ?? []) for (const input of node.input ?? []) consumers.set(input, (consumers.get(input) ?? 0) + 1);

  const nodes: OnnxTypes.INodeProto[] = [];
  const report: QuantizeReport = { matmuls: 0 };
  const dropped = new Set<string>();
  const c = addConstants(graph);
  for (const node of graph.node ?? []) {
    const weight = node.opType === 'MatMul' ? initializers.get(node.input![1]!) : undefined;
    if (!weight || weight.dataType !== DT.FLOAT || weight.dims?.length !== 2) {
      nodes.push(node);
      continue;
    }
    const [rows, cols] = weight.dims.map(Number) as [number, number];
    const values = floatData(weight);
    const { q, scales } = quantizeColumns(values, rows, cols);
    const base = node.output![0]!;
    const wq = `${weight.name}_int8`;
    const ws = `${weight.name}_scale`;
    const wzp = `${weight.name}_zero_point`;
    // A weight read by another node too keeps its float copy; none in USE-lite is.
    if ((consumers.get(weight.name!) ?? 0) === 1) dropped.add(weight.name!);
    graph.initializer!.push(
      { name: wq, dims: [rows, cols], dataType: DT.UINT8, rawData: Buffer.from(q.buffer, q.byteOffset, q.byteLength) },
      { name: ws, dims: [cols], dataType: DT.FLOAT, rawData: Buffer.from(scales.buffer, scales.byteOffset, scales.byteLength) },
      { name: wzp, dims: [cols], dataType: DT.UINT8, rawData: Buffer.alloc(cols, WEIGHT_ZERO_POINT) },
    );
    const absMax = `${base}_a_absmax`;
    const scale = `${base}_a_scale`;
    const aq = `${base}_a_quant`;
    nodes.push(
      { opType: 'Abs', input: [node.input![0]!], output: [`${base}_a_abs`], name: `${base}_abs_a` },
      { opType: 'ReduceMax', input: [`${base}_a_abs`], output: [`${base}_a_rowmax`], name: `${base}_rowmax_a`, attribute: [intsAttr('axes', [-1]), intAttr('keepdims', 1)] },
      { opType: 'Max', input: [`${base}_a_rowmax`, c.minAbsMax], output: [absMax], name: `${base}_absmax_floor` },
      { opType: 'Div', input: [absMax, c.activationMax], output: [scale], name: `${base}_row_scale` },
      { opType: 'Div', input: [node.input![0]!, scale], output: [`${base}_a_scaled`], name: `${base}_scale_a` },
      { opType: 'Round', input: [`${base}_a_scaled`], output: [`${base}_a_rounded`], name: `${base}_round_a` },
      { opType: 'Add', input: [`${base}_a_rounded`, c.zeroPointFloat], output: [`${base}_a_shifted`], name: `${base}_shift_a` },
      { opType: 'Clip', input: [`${base}_a_shifted`, c.uint8Min, c.uint8Max], output: [`${base}_a_clipped`], name: `${base}_clip_a` },
      { opType: 'Cast', input: [`${base}_a_clipped`], output: [aq], name: `${base}_cast_a`, attribute: [intAttr('to', DT.UINT8)] },
      { opType: 'MatMulInteger', input: [aq, wq, c.zeroPoint, wzp], output: [`${base}_int32`], name: `${base}_matmul_integer` },
      { opType: 'Cast', input: [`${base}_int32`], output: [`${base}_float`], name: `${base}_cast`, attribute: [intAttr('to', DT.FLOAT)] },
      { opType: 'Mul', input: [`${base}_float`, scale], output: [`${base}_row_rescaled`], name: `${base}_rescale_rows` },
      { opType: 'Mul', input: [`${base}_row_rescaled`, ws], output: [base], name: `${base}_rescale` },
    );
    report.matmuls++;
  }
  graph.node = nodes;
  graph.initializer = graph.initializer!.filter((init) => !dropped.has(init.name!));
  // MatMulInteger (opset 10), Round (11) and Clip with min/max inputs (11) are within the model's opset 13.
  const err = onnx.ModelProto.verify(model);
  if (err) throw new Error(`invalid quantized ModelProto: ${err}`);
  return { bytes: onnx.ModelProto.encode(model).finish(), report };
}

/** The scalars every rewritten matmul reads, added to the graph once. */
function addConstants(graph: OnnxTypes.IGraphProto) {
  const float = (name: string, value: number): string => {
    graph.initializer!.push({ name, dims: [], dataType: DT.FLOAT, rawData: Buffer.from(Float32Array.of(value).buffer) });
    return name;
  };
  graph.initializer!.push({ name: 'rowquant_zero_point', dims: [], dataType: DT.UINT8, rawData: Buffer.from([ACTIVATION_ZERO_POINT]) });
  return {
    zeroPoint: 'rowquant_zero_point',
    zeroPointFloat: float('rowquant_zero_point_float', ACTIVATION_ZERO_POINT),
    activationMax: float('rowquant_activation_max', ACTIVATION_MAX),
    minAbsMax: float('rowquant_min_absmax', MIN_ROW_ABS_MAX),
    uint8Min: float('rowquant_uint8_min', 0),
    uint8Max: float('rowquant_uint8_max', 255),
  };
}

function intAttr(name: string, i: number): OnnxTypes.IAttributeProto {
  return { name, type: onnx.AttributeProto.AttributeType.INT, i };
}

function intsAttr(name: string, ints: number[]): OnnxTypes.IAttributeProto {
  return { name, type: onnx.AttributeProto.AttributeType.INTS, ints };
}

function floatData(tensor: OnnxTypes.ITensorProto): Float32Array {
  if (tensor.rawData && tensor.rawData.length > 0) {
    const raw = tensor.rawData;
    const out = new Float32Array(raw.length / 4);
    const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
    for (let i = 0; i < out.length; i++) out[i] = view.getFloat32(i * 4, true);
    return out;
  }
  return Float32Array.from(tensor.floatData ?? []);
}

/** Row-major [rows, cols] → 8-bit weights and one scale per column (symmetric about the zero point 128). */
function quantizeColumns(values: Float32Array, rows: number, cols: number): { q: Uint8Array; scales: Float32Array } {
  const scales = new Float32Array(cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) scales[c] = Math.max(scales[c]!, Math.abs(values[r * cols + c]!));
  }
  for (let c = 0; c < cols; c++) scales[c] = scales[c]! > 0 ? scales[c]! / WEIGHT_MAX : 1;
  const q = new Uint8Array(rows * cols);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const v = Math.round(values[r * cols + c]! / scales[c]!);
      q[r * cols + c] = WEIGHT_ZERO_POINT + Math.max(-WEIGHT_MAX, Math.min(WEIGHT_MAX, v));
    }
  }
  return { q, scales };
}
