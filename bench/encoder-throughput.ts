/**
 * Throughput of the local encoder (OnnxEmbedder) on this machine. Run by hand:
 *   npx tsx bench/encoder-throughput.ts [--precision fp32|int8] [--threads 1] [--runs 3]
 *   (or node dist/bench/encoder-throughput.js ...)
 * Prints load time, throughput for short sentences (several batch sizes, and one text per call) and
 * for paragraphs, and resident memory. `--threads 1` is how the server runs it
 * (MEMORYPOOL_ENCODER_THREADS); without it onnxruntime picks. Needs the built model (npm run build:model).
 */
import { parseArgs } from 'node:util';
import { MODEL_PRECISIONS, OnnxEmbedder, type ModelPrecision } from '../src/embedding/onnx-embedder.js';
import { paragraph, sentence } from './encoder-texts.js';

/**
 * Best of `runs` runs, as wall-clock texts/s and CPU ms per text of this process (every ORT
 * thread counts). On a busy 2-core machine the slower runs mostly measure neighbours, and the
 * CPU figure is the steadier of the two.
 */
async function rate(embedder: OnnxEmbedder, texts: string[], perCall: number, runs: number): Promise<string> {
  let bestWall = 0;
  let bestCpu = Infinity;
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    const cpu = process.cpuUsage();
    for (let i = 0; i < texts.length; i += perCall) await embedder.embed(texts.slice(i, i + perCall));
    const used = process.cpuUsage(cpu);
    bestWall = Math.max(bestWall, texts.length / ((performance.now() - started) / 1000));
    bestCpu = Math.min(bestCpu, (used.user + used.system) / 1000 / texts.length);
  }
  return `${bestWall.toFixed(0)} texts/s, ${bestCpu.toFixed(3)} CPU ms per text`;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { precision: { type: 'string', default: 'fp32' }, threads: { type: 'string' }, runs: { type: 'string', default: '3' } } });
  const precision = values.precision as ModelPrecision;
  if (!MODEL_PRECISIONS.includes(precision)) throw new RangeError(`--precision must be one of ${MODEL_PRECISIONS.join(', ')}`);
  const intraOpThreads = values.threads === undefined ? undefined : Number(values.threads);
  const runs = Number(values.runs);
  console.log(`precision ${precision}, intra-op threads ${intraOpThreads ?? 'onnxruntime default'}, best of ${runs}`);

  const loadStart = performance.now();
  const warm = new OnnxEmbedder({ precision, intraOpThreads });
  await warm.ready();
  console.log(`load: ${(performance.now() - loadStart).toFixed(0)} ms`);
  await warm.embed(Array.from({ length: 64 }, (_, i) => sentence(i))); // warm-up
  await warm.close();

  const short = Array.from({ length: 2048 }, (_, i) => sentence(i));
  for (const batchSize of [16, 32, 64, 128]) {
    const e = new OnnxEmbedder({ batchSize, precision, intraOpThreads });
    await e.ready();
    console.log(`short sentences, batch ${batchSize}: ${await rate(e, short, short.length, runs)}`);
    await e.close();
  }
  const e = new OnnxEmbedder({ precision, intraOpThreads });
  await e.ready();
  // One Add's 20 messages per call, and one query per call: the server's two common shapes.
  console.log(`short sentences, 20 per call: ${await rate(e, short.slice(0, 1024), 20, runs)}`);
  console.log(`short sentences, one per call: ${await rate(e, short.slice(0, 512), 1, runs)}`);
  const paragraphs = Array.from({ length: 512 }, (_, i) => paragraph(i));
  console.log(`paragraphs (~50 tokens), batch 64: ${await rate(e, paragraphs, paragraphs.length, runs)}`);
  console.log(`rss: ${(process.memoryUsage().rss / 1e6).toFixed(0)} MB`);
  await e.close();
}

await main();
