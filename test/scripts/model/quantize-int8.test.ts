import path from 'node:path';
import { fileURLToPath } from 'node:url';
import onnxProto from 'onnx-proto';
import { describe, expect, it } from 'vitest';
import { FLOAT, GraphBuilder } from '../../../scripts/model/onnx-builder.js';
import { ACTIVATION_ABS_MAX, CALIBRATION } from '../../../scripts/model/activation-ranges.js';
import { activationRanges, floatModel, wordnetTexts } from '../../../scripts/model/calibrate-activations.js';
import { INT8_PLAN } from '../../../scripts/model/int8-plan.js';
import { quantizeInt8, weightMatmuls, type ActivationPlan } from '../../../scripts/model/quantize-int8.js';
import { findProjectRoot } from '../../../scripts/model/use-lite-source.js';
import { onnxRuntime } from '../../../src/embedding/onnx-embedder.js';

// A small dense → ReLU → dense graph with fixed random weights, quantized as the int8 build does
// and run through onnxruntime: each activation mode must stay close to the float product, read
// nothing but its own row, and fail loudly on a matmul the plan does not cover.

const IN = 16;
const HIDDEN = 24;
const OUT = 8;

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32 - 0.5;
  };
}

function tinyModel(): Uint8Array {
  const random = seeded(7);
  const values = (n: number) => Float32Array.from({ length: n }, random);
  const g = new GraphBuilder();
  const x = g.input('x', FLOAT, ['rows', IN]);
  const h = g.op('Relu', [g.op('Add', [g.op('MatMul', [x, g.floatTensor('w1', [IN, HIDDEN], values(IN * HIDDEN))], {}, 'first_mm'), g.floatTensor('b1', [HIDDEN], values(HIDDEN))])]);
  const y = g.op('Add', [g.op('MatMul', [h, g.floatTensor('w2', [HIDDEN, OUT], values(HIDDEN * OUT))], {}, 'second_mm'), g.floatTensor('b2', [OUT], values(OUT))]);
  g.output(y, 'y', FLOAT, ['rows', OUT]);
  return g.encode({ graphName: 'tiny', opset: 13, producer: 'test', docString: '', metadata: {} });
}

async function run(model: Uint8Array, rows: Float32Array): Promise<Float32Array> {
  const ort = await onnxRuntime();
  const session = await ort.InferenceSession.create(Buffer.from(model), { intraOpNumThreads: 1 });
  const out = await session.run({ x: new ort.Tensor('float32', rows, [rows.length / IN, IN]) });
  return out.y!.data as Float32Array;
}

const inputs = Float32Array.from({ length: 5 * IN }, seeded(11));
// Ranges that cover these inputs (|x| < 0.5; the hidden layer's values stay below 3).
const PLANS: Record<string, ActivationPlan> = {
  fixed: { first_mm: { absMax: 0.5 }, second_mm: { absMax: 3 } },
  'per row': { first_mm: 'row', second_mm: 'row' },
  mixed: { first_mm: 'row', second_mm: 'float' },
};

describe('quantizeInt8', () => {
  const float = tinyModel();

  it.each(Object.entries(PLANS))('keeps the product close to the float one with %s scales, and each row independent of the others', async (_, plan) => {
    const { bytes } = quantizeInt8(float, plan);
    const [exact, quantized] = [await run(float, inputs), await run(bytes, inputs)];
    const scale = Math.max(...exact.map(Math.abs));
    for (let i = 0; i < exact.length; i++) expect(Math.abs(quantized[i]! - exact[i]!)).toBeLessThan(0.02 * scale);
    // The same row alone gives the same numbers, bit for bit.
    for (let row = 0; row < 5; row++) {
      const alone = await run(bytes, inputs.slice(row * IN, (row + 1) * IN));
      expect(Array.from(alone)).toEqual(Array.from(quantized.slice(row * OUT, (row + 1) * OUT)));
    }
  });

  it('spends two kernels on a fixed-scale dense layer, its bias inside the integer matmul', () => {
    const { bytes, report } = quantizeInt8(float, PLANS.fixed!);
    const ops = onnxProto.onnx.ModelProto.decode(bytes).graph!.node!.map((node) => node.opType);
    expect(report).toEqual({ fixed: 2, perRow: 0, float: 0 });
    expect(ops).toEqual(['QuantizeLinear', 'MatMulIntegerToFloat', 'Relu', 'QuantizeLinear', 'MatMulIntegerToFloat', 'Identity']);
  });

  it('saturates a value past its fixed range instead of wrapping around', async () => {
    const { bytes } = quantizeInt8(float, { first_mm: { absMax: 0.5 }, second_mm: 'float' });
    const big = inputs.map((v) => v * 4); // up to ±2, four times the range
    const clipped = inputs.map((v) => Math.max(-0.5, Math.min(0.5, v * 4)));
    const [got, expected] = [await run(bytes, big), await run(float, clipped)];
    const scale = Math.max(...expected.map(Math.abs));
    for (let i = 0; i < got.length; i++) expect(Math.abs(got[i]! - expected[i]!)).toBeLessThan(0.02 * scale);
  });

  it('refuses a graph with a weight matmul the plan does not name, and a range that is not a positive number', () => {
    expect(() => quantizeInt8(float, { first_mm: 'row' })).toThrow(/no activation plan for weight matmul\(s\) second_mm/);
    expect(() => quantizeInt8(float, { first_mm: { absMax: 0 }, second_mm: 'float' })).toThrow(/positive number/);
  });

  it('finds the weight matmuls by their weights, not their names', () => {
    const names = weightMatmuls(onnxProto.onnx.ModelProto.decode(float)).map((node) => node.output![0]);
    expect(names).toEqual(['first_mm', 'second_mm']);
  });

  it('the build plan covers USE-lite with one scale per row (layer 0 QKV), a float tanh layer and fixed scales elsewhere', () => {
    const modes = Object.values(INT8_PLAN).map((entry) => (typeof entry === 'string' ? entry : 'fixed'));
    expect(modes.filter((m) => m === 'row')).toHaveLength(1);
    expect(modes.filter((m) => m === 'float')).toHaveLength(1);
    expect(modes.filter((m) => m === 'fixed')).toHaveLength(8);
    expect(INT8_PLAN.l0_qkv_mm).toBe('row');
    expect(INT8_PLAN.tanh_mm).toBe('float');
  });
});

describe('the committed activation ranges', () => {
  it('still bound what the float graph computes on calibration texts (rerun calibrate-activations after a graph change)', async () => {
    const { float, vocab } = await floatModel(findProjectRoot(path.dirname(fileURLToPath(import.meta.url))));
    // A sample of the texts the ranges were taken over: each maximum is at most the committed one,
    // and the largest of them comes near it (a graph that shrank its activations would leave the
    // grid half empty).
    const ranges = await activationRanges(float, vocab, wordnetTexts(CALIBRATION.texts).slice(0, 300));
    expect(Object.keys(ranges).sort()).toEqual(Object.keys(ACTIVATION_ABS_MAX).sort());
    for (const [name, max] of Object.entries(ranges)) {
      // A float kernel of another CPU may round a maximum a few ulps the other way.
      expect(max).toBeLessThanOrEqual(ACTIVATION_ABS_MAX[name]! * (1 + 1e-4));
      expect(max).toBeGreaterThan(ACTIVATION_ABS_MAX[name]! * 0.4);
    }
  }, 60_000);
});
