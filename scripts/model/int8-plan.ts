import { ACTIVATION_ABS_MAX } from './activation-ranges.js';
import type { ActivationPlan } from './quantize-int8.js';

/**
 * How the int8 build quantizes each weight matmul's activations (scripts/model/quantize-int8.ts).
 * Chosen by the cosine to the float vectors over the first 1,000 LoCoMo turns (bare texts; the
 * variants' table is in bench/HISTORY.md, "fixed activation scales") with the encoder's time per
 * text beside it, and checked on WordNet texts the calibration did not use (models/README.md):
 *
 * - Fixed scales everywhere cost most at the tanh layer, whose input (the mean over tokens) ranges
 *   six times wider from one text to another than any token's row: mean cosine 0.99745 against
 *   0.9996 with that one matmul per row. It runs once per text on a [batch, 512] input, so it stays
 *   float: exact, and a hundredth of the encoder's arithmetic.
 * - Of the other nine, layer 0's QKV projection loses most with a fixed scale (its error goes
 *   through every later layer): a scale per row there and fixed scales elsewhere give mean 0.99945
 *   and min 0.99836 on LoCoMo turns, the per-call build's accuracy (0.99945, 0.99829), at 1.01-1.03×
 *   its time per text; every matmul per row gave 0.99964 at 1.16×.
 */
// A change here (or a new calibration) changes the int8 vectors: bump INT8_FORMAT in
// src/embedding/onnx-embedder.ts with it, so stored vectors are re-embedded.
const PER_ROW = new Set(['l0_qkv_mm']);
const FLOAT = new Set(['tanh_mm']);

export const INT8_PLAN: ActivationPlan = Object.fromEntries(
  Object.entries(ACTIVATION_ABS_MAX).map(([name, absMax]) => [name, PER_ROW.has(name) ? 'row' : FLOAT.has(name) ? 'float' : { absMax }]),
);
