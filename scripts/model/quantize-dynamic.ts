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
 *   m = max(|A| over the last axis, tiny)                (one per row of A)
 *   A_q = QuantizeLinear(A / m, 1/127, 128)               (each row onto ±127 around 128)
 *   MatMulIntegerToFloat(A_q, W_q, 1/127, W_scale, 128, W_zp) → Mul(m)
 *
 * with W quantized once, here, per output column and symmetrically (below). Matmuls of two
 * activations (attention) stay float. Dividing each row by its own maximum first lets one scalar
 * scale serve every row, which is what QuantizeLinear and onnxruntime's fused
 * MatMulIntegerToFloat (integer product, then both scales in one pass) take; the same arithmetic
 * spelled out as Round, Clip, Cast, MatMulInteger, Cast and two Muls cost 12-18% of the
 * encoder's throughput against the per-call build.
 *
 * Why per row: `DynamicQuantizeLinear` takes one scale over its whole input, i.e. over every text
 * of a batch and their padding, so a text's vector depended on what it was encoded with (cosine
 * 0.9995 to itself encoded alone, components off by up to 8e-3). With a scale per row, each
 * token's row is quantized from its own values only, the integer product is exact, and the
 * rescale is element-wise, so a text's vector is the same in any batch. The grid is symmetric
 * (zero point 128 for every row; 0 for a ReLU's output) because MatMulIntegerToFloat takes one
 * zero point for A.
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
/** A non-negative input (a ReLU's) uses all of 0-255. */
const UNSIGNED_MAX = 255;
/** The smallest row scale: an all-zero row (padding) divides by this instead of by 0 and stays 0. */
const MIN_ROW_ABS_MAX = 1e-30;
/** onnxruntime's contrib operators (MatMulIntegerToFloat). */
const MICROSOFT_DOMAIN = 'com.microsoft';

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
  const producers = new Map<string, string>();
  for (const node of graph.node ?? []) for (const output of node.output ?? []) producers.set(output, node.opType!);

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
    const a = node.input![0]!;
    // A ReLU's output has no negative values: its row maximum needs no Abs, and the whole 8 bits
    // (0-255 around a zero point of 0) go to its range.
    const nonNegative = producers.get(a) === 'Relu';
    const grid = nonNegative ? { scale: c.unsignedScale, zeroPoint: c.unsignedZeroPoint } : { scale: c.activationScale, zeroPoint: c.zeroPoint };
    const absMax = `${base}_a_absmax`;
    const aq = `${base}_a_quant`;
    if (!nonNegative) nodes.push({ opType: 'Abs', input: [a], output: [`${base}_a_abs`], name: `${base}_abs_a` });
    nodes.push(
      { opType: 'ReduceMax', input: [nonNegative ? a : `${base}_a_abs`], output: [`${base}_a_rowmax`], name: `${base}_rowmax_a`, attribute: [intsAttr('axes', [-1]), intAttr('keepdims', 1)] },
      { opType: 'Max', input: [`${base}_a_rowmax`, c.minAbsMax], output: [absMax], name: `${base}_absmax_floor` },
      { opType: 'Div', input: [a, absMax], output: [`${base}_a_unit`], name: `${base}_unit_a` },
      { opType: 'QuantizeLinear', input: [`${base}_a_unit`, grid.scale, grid.zeroPoint], output: [aq], name: `${base}_quantize_a` },
      {
        opType: 'MatMulIntegerToFloat',
        domain: MICROSOFT_DOMAIN,
        input: [aq, wq, grid.scale, ws, grid.zeroPoint, wzp],
        output: [`${base}_unit_product`],
        name: `${base}_matmul_integer`,
      },
      { opType: 'Mul', input: [`${base}_unit_product`, absMax], output: [base], name: `${base}_rescale_rows` },
    );
    report.matmuls++;
  }
  graph.node = nodes;
  graph.initializer = graph.initializer!.filter((init) => !dropped.has(init.name!));
  // QuantizeLinear is opset 10, within the model's 13; MatMulIntegerToFloat is onnxruntime's own.
  if (!(model.opsetImport ?? []).some((opset) => opset.domain === MICROSOFT_DOMAIN)) {
    model.opsetImport = [...(model.opsetImport ?? []), { domain: MICROSOFT_DOMAIN, version: 1 }];
  }
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
  const uint8 = (name: string, value: number): string => {
    graph.initializer!.push({ name, dims: [], dataType: DT.UINT8, rawData: Buffer.from([value]) });
    return name;
  };
  return {
    zeroPoint: uint8('rowquant_zero_point', ACTIVATION_ZERO_POINT),
    activationScale: float('rowquant_activation_scale', 1 / ACTIVATION_MAX),
    unsignedZeroPoint: uint8('rowquant_unsigned_zero_point', 0),
    unsignedScale: float('rowquant_unsigned_scale', 1 / UNSIGNED_MAX),
    minAbsMax: float('rowquant_min_absmax', MIN_ROW_ABS_MAX),
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
