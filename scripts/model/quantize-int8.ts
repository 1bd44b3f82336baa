import onnxProto from 'onnx-proto';
import type { onnx as OnnxTypes } from 'onnx-proto';

const { onnx } = onnxProto;
const DT = onnx.TensorProto.DataType;

/**
 * Int8 quantization of an ONNX model's weight matmuls (the rewrite onnxruntime's Python
 * `quantize_static`/`quantize_dynamic` do, which are not installable here). Weights are quantized
 * here, once, per output column; each matmul's activations follow its entry in the plan:
 *
 * - `{ absMax }`, a fixed scale: the largest magnitude the matmul's input reached over calibration
 *   texts (scripts/model/activation-ranges.ts) maps onto the 8-bit grid, and
 *   `QuantizeLinear(A, s, 128)` → `MatMulIntegerToFloat(A_q, W_q, s, W_scale, 128, W_zp, bias)`
 *   is the whole matmul, bias included: two kernels, as few as onnxruntime's fused per-call
 *   `DynamicQuantizeMatMul`. A value past the calibrated range saturates at ±127.
 * - `'row'`, a scale per row (per token): `m = max(|A| over the last axis, tiny)`,
 *   `QuantizeLinear(A / m, 1/127, 128)` → `MatMulIntegerToFloat` → `Mul(m)` → bias. Five kernels
 *   more than a fixed scale; kept where a token's own range matters most.
 * - `'float'`: left as it is.
 *
 * Why no per-call scale: `DynamicQuantizeLinear` takes one scale over its whole input, i.e. over
 * every text of a batch and their padding, so a text's vector depended on what it was encoded with
 * (cosine 0.9995 to itself encoded alone, components off by up to 8e-3). A fixed scale and a row's
 * own scale both read nothing but the row, the integer product is exact, and the rescale is
 * element-wise, so a text's vector is the same in any batch. Fixed scales cost no kernel per call,
 * which a scale per row does (the build with every matmul per row ran at 1.16× the per-call
 * build's time per text: 60 small kernels a pass, on inputs of a few kilobytes).
 *
 * The grid is symmetric: zero point 128 and ±127 (a ReLU's output, never negative: zero point 0
 * and all of 0-255). Weights are unsigned 8-bit around 128 (±127) per column. Signed int8 weights
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

/** How each weight matmul's activations are quantized, by the name of the matmul's output. */
export type ActivationPlan = Record<string, { absMax: number } | 'row' | 'float'>;

export interface QuantizeReport {
  /** Matmuls with a fixed activation scale, a scale per row, and left float. */
  fixed: number;
  perRow: number;
  float: number;
}

/** The weight matmuls of a graph (a MatMul whose right operand is a 2-D float initializer), by output name. */
export function weightMatmuls(model: OnnxTypes.IModelProto): OnnxTypes.INodeProto[] {
  const initializers = new Map<string, OnnxTypes.ITensorProto>();
  for (const init of model.graph?.initializer ?? []) initializers.set(init.name!, init);
  return (model.graph?.node ?? []).filter((node) => {
    const weight = node.opType === 'MatMul' ? initializers.get(node.input![1]!) : undefined;
    return weight?.dataType === DT.FLOAT && weight.dims?.length === 2;
  });
}

export function quantizeInt8(modelBytes: Uint8Array, plan: ActivationPlan): { bytes: Uint8Array; report: QuantizeReport } {
  const model = onnx.ModelProto.decode(modelBytes);
  const graph = model.graph!;
  const initializers = new Map<string, OnnxTypes.ITensorProto>();
  for (const init of graph.initializer ?? []) initializers.set(init.name!, init);
  const consumers = new Map<string, OnnxTypes.INodeProto[]>();
  for (const node of graph.node ?? []) for (const input of node.input ?? []) consumers.set(input, [...(consumers.get(input) ?? []), node]);
  const producers = new Map<string, string>();
  for (const node of graph.node ?? []) for (const output of node.output ?? []) producers.set(output, node.opType!);

  const matmuls = new Set(weightMatmuls(model));
  const unplanned = [...matmuls].map((node) => node.output![0]!).filter((name) => !(name in plan));
  // A graph whose matmuls the calibration never saw must fail the build, not run on guessed scales.
  if (unplanned.length > 0) throw new Error(`no activation plan for weight matmul(s) ${unplanned.join(', ')}: rerun scripts/model/calibrate-activations`);

  const nodes: OnnxTypes.INodeProto[] = [];
  const report: QuantizeReport = { fixed: 0, perRow: 0, float: 0 };
  const dropped = new Set<string>();
  const folded = new Set<OnnxTypes.INodeProto>();
  const c = addConstants(graph);
  for (const node of graph.node ?? []) {
    if (folded.has(node)) continue;
    const entry = matmuls.has(node) ? plan[node.output![0]!]! : 'float';
    if (entry === 'float') {
      if (matmuls.has(node)) report.float++;
      nodes.push(node);
      continue;
    }
    const weight = initializers.get(node.input![1]!)!;
    const [rows, cols] = weight.dims!.map(Number) as [number, number];
    const { q, scales } = quantizeColumns(floatData(weight), rows, cols);
    const base = node.output![0]!;
    const wq = `${weight.name}_int8`;
    const ws = `${weight.name}_scale`;
    const wzp = `${weight.name}_zero_point`;
    // A weight read by another node too keeps its float copy; none in USE-lite is.
    if ((consumers.get(weight.name!)?.length ?? 0) === 1) dropped.add(weight.name!);
    graph.initializer!.push(
      { name: wq, dims: [rows, cols], dataType: DT.UINT8, rawData: Buffer.from(q.buffer, q.byteOffset, q.byteLength) },
      { name: ws, dims: [cols], dataType: DT.FLOAT, rawData: Buffer.from(scales.buffer, scales.byteOffset, scales.byteLength) },
      { name: wzp, dims: [cols], dataType: DT.UINT8, rawData: Buffer.alloc(cols, WEIGHT_ZERO_POINT) },
    );
    const a = node.input![0]!;
    // A ReLU's output has no negative values: its maximum needs no Abs, and the whole 8 bits
    // (0-255 around a zero point of 0) go to its range.
    const nonNegative = producers.get(a) === 'Relu';
    const zeroPoint = nonNegative ? c.unsignedZeroPoint : c.zeroPoint;
    const aq = `${base}_a_quant`;
    if (entry === 'row') {
      const unitScale = nonNegative ? c.unsignedScale : c.activationScale;
      const absMax = `${base}_a_absmax`;
      if (!nonNegative) nodes.push({ opType: 'Abs', input: [a], output: [`${base}_a_abs`], name: `${base}_abs_a` });
      nodes.push(
        { opType: 'ReduceMax', input: [nonNegative ? a : `${base}_a_abs`], output: [`${base}_a_rowmax`], name: `${base}_rowmax_a`, attribute: [intsAttr('axes', [-1]), intAttr('keepdims', 1)] },
        { opType: 'Max', input: [`${base}_a_rowmax`, c.minAbsMax], output: [absMax], name: `${base}_absmax_floor` },
        { opType: 'Div', input: [a, absMax], output: [`${base}_a_unit`], name: `${base}_unit_a` },
        { opType: 'QuantizeLinear', input: [`${base}_a_unit`, unitScale, zeroPoint], output: [aq], name: `${base}_quantize_a` },
        { opType: 'MatMulIntegerToFloat', domain: MICROSOFT_DOMAIN, input: [aq, wq, unitScale, ws, zeroPoint, wzp], output: [`${base}_unit_product`], name: `${base}_matmul_integer` },
        { opType: 'Mul', input: [`${base}_unit_product`, absMax], output: [base], name: `${base}_rescale_rows` },
      );
      report.perRow++;
      continue;
    }
    if (!(entry.absMax > 0 && Number.isFinite(entry.absMax))) throw new Error(`activation range of ${base} must be a positive number, got ${entry.absMax}`);
    const scale = addFloat(graph, `${base}_a_scale`, entry.absMax / (nonNegative ? UNSIGNED_MAX : ACTIVATION_MAX));
    nodes.push({ opType: 'QuantizeLinear', input: [a, scale, zeroPoint], output: [aq], name: `${base}_quantize_a` });
    // The bias Add that follows (dense layers) goes into the kernel: one pass fewer over the output.
    const next = consumers.get(base) ?? [];
    const biasAdd = next.length === 1 && next[0]!.opType === 'Add' && initializers.get(next[0]!.input![1]!)?.dims?.length === 1 ? next[0]! : undefined;
    if (biasAdd) folded.add(biasAdd);
    nodes.push({
      opType: 'MatMulIntegerToFloat',
      domain: MICROSOFT_DOMAIN,
      input: [aq, wq, scale, ws, zeroPoint, wzp, ...(biasAdd ? [biasAdd.input![1]!] : [])],
      output: [biasAdd ? biasAdd.output![0]! : base],
      name: `${base}_matmul_integer`,
    });
    report.fixed++;
  }
  graph.node = nodes;
  const used = new Set(nodes.flatMap((node) => node.input ?? []));
  graph.initializer = graph.initializer!.filter((init) => !dropped.has(init.name!) && used.has(init.name!));
  // QuantizeLinear is opset 10, within the model's 13; MatMulIntegerToFloat is onnxruntime's own.
  if (!(model.opsetImport ?? []).some((opset) => opset.domain === MICROSOFT_DOMAIN)) {
    model.opsetImport = [...(model.opsetImport ?? []), { domain: MICROSOFT_DOMAIN, version: 1 }];
  }
  const err = onnx.ModelProto.verify(model);
  if (err) throw new Error(`invalid quantized ModelProto: ${err}`);
  return { bytes: onnx.ModelProto.encode(model).finish(), report };
}

function addFloat(graph: OnnxTypes.IGraphProto, name: string, value: number): string {
  graph.initializer!.push({ name, dims: [], dataType: DT.FLOAT, rawData: Buffer.from(Float32Array.of(value).buffer) });
  return name;
}

/** The scalars the rewritten matmuls share, added to the graph once (unused ones are dropped at the end). */
function addConstants(graph: OnnxTypes.IGraphProto) {
  const uint8 = (name: string, value: number): string => {
    graph.initializer!.push({ name, dims: [], dataType: DT.UINT8, rawData: Buffer.from([value]) });
    return name;
  };
  return {
    zeroPoint: uint8('int8_zero_point', ACTIVATION_ZERO_POINT),
    activationScale: addFloat(graph, 'rowquant_activation_scale', 1 / ACTIVATION_MAX),
    unsignedZeroPoint: uint8('int8_unsigned_zero_point', 0),
    unsignedScale: addFloat(graph, 'rowquant_unsigned_scale', 1 / UNSIGNED_MAX),
    minAbsMax: addFloat(graph, 'rowquant_min_absmax', MIN_ROW_ABS_MAX),
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
