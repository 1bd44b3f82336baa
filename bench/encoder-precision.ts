/**
 * The int8 model against the float one on real texts, and both encoders' speed. Run by hand:
 *   npm run build && node dist/bench/encoder-precision.js [--texts 1000] [--threads 1] [--locomo <file> | --wordnet]
 * Embeds the first N LoCoMo turns in the form the service embeds them ("Speaker: text") with each
 * precision (or, with --wordnet, N WordNet sentences the int8 build's calibration did not use),
 * prints the mean and minimum cosine of each int8 vector to its float vector, and each encoder's
 * messages/s and CPU ms per message (best of three, all texts in one call). Recall on the
 * dev sets is the eval's job: `npm run eval -- locomo ... --precision int8`.
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { MODEL_PRECISIONS, OnnxEmbedder, type ModelPrecision } from '../src/embedding/onnx-embedder.js';
import { denseText, splitIntoUnits } from '../src/ingest/message-units.js';
import { CALIBRATION } from '../scripts/model/activation-ranges.js';
import { heldOutWordnetTexts } from '../scripts/model/calibrate-activations.js';
import { round } from './http-load.js';
import { DEFAULT_LOCOMO, loadWorkload } from './workload.js';

/** The first N LoCoMo turns, split into units and in the "Speaker: text" form, as the service embeds them. */
async function locomoSample(file: string, wanted: number): Promise<{ source: string; turns: unknown[]; texts: string[] }> {
  const workload = await loadWorkload(file);
  const turns = workload.conversations.flatMap((conversation) => conversation.turns).slice(0, wanted);
  // A message may split into several units; the cosine is per unit, the rate per message.
  const texts = turns.flatMap((turn) => splitIntoUnits(turn.content).map((text) => denseText({ text, role: turn.speaker, timeMs: turn.timeMs })));
  return { source: workload.source, turns, texts };
}

function wordnetSample(wanted: number): { source: string; turns: unknown[]; texts: string[] } {
  const texts = heldOutWordnetTexts(wanted, CALIBRATION.texts);
  return { source: `wordnet, not among the ${CALIBRATION.texts} calibration texts`, turns: texts, texts };
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { texts: { type: 'string', default: '1000' }, threads: { type: 'string' }, locomo: { type: 'string' }, wordnet: { type: 'boolean', default: false } } });
  const wanted = Number(values.texts);
  const threads = values.threads === undefined ? undefined : Number(values.threads);
  const { source, turns, texts } = values.wordnet ? wordnetSample(wanted) : await locomoSample(values.locomo ?? DEFAULT_LOCOMO, wanted);

  const vectors = new Map<ModelPrecision, Float32Array[]>();
  const speed: Record<string, unknown> = {};
  for (const precision of MODEL_PRECISIONS) {
    const embedder = new OnnxEmbedder({ precision, intraOpThreads: threads });
    await embedder.ready();
    await embedder.embed(texts.slice(0, 128)); // warm-up: first runs of each shape allocate
    let best = { messages_per_s: 0, cpu_ms_per_message: Infinity };
    for (let run = 0; run < 3; run++) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      vectors.set(precision, await embedder.embed(texts));
      const seconds = (performance.now() - started) / 1000;
      const used = process.cpuUsage(cpu);
      best = {
        messages_per_s: Math.max(best.messages_per_s, round(turns.length / seconds, 1)),
        cpu_ms_per_message: Math.min(best.cpu_ms_per_message, round((used.user + used.system) / 1000 / turns.length, 3)),
      };
    }
    speed[precision] = best;
    await embedder.close();
  }
  const float = vectors.get('fp32')!;
  const int8 = vectors.get('int8')!;
  let sum = 0;
  let min = 1;
  float.forEach((a, i) => {
    let cos = 0;
    for (let k = 0; k < a.length; k++) cos += a[k]! * int8[i]![k]!;
    sum += cos;
    min = Math.min(min, cos);
  });
  const summary = {
    texts: { source, messages: turns.length, units: texts.length },
    intra_op_threads: threads ?? 'onnxruntime default',
    cosine_int8_to_fp32: { mean: round(sum / texts.length, 5), min: round(min, 5) },
    speed,
    load_avg: os.loadavg().map((value) => round(value, 2)),
  };
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
}

await main();
