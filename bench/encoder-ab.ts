/**
 * Two builds of the encoder's graph side by side in one process, interleaved, so the machine's
 * load falls on both alike (issue 31: the batch-invariant int8 graph against the per-call one).
 * Run by hand:
 *   node dist/bench/encoder-ab.js --a <model dir> --b <model dir> [--precision int8] [--threads 1] [--rounds 10]
 * e.g. `--a` an earlier commit's models/use-lite and `--b` this one's. Each graph runs in a session
 * opened as the service opens its own (openSession) on the same token ids (tokenized once, by this
 * checkout's tokenizer, so only the graphs differ; an earlier build's config format is not
 * checked). For 1, 20 and 64 short sentences per call it prints each graph's fastest call (ms per
 * text) over the rounds, and b/a; b/a below 1.05 is within 5%. Run it twice with the same
 * directory as --a and --b to see this machine's spread at that moment.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { InferenceSession } from 'onnxruntime-node';
import { MODEL_FILES, MODEL_PRECISIONS, UNNORMALISED_OUTPUT, UseLiteTokenizer, normalise, onnxRuntime, openSession, paddedInputs, packageRoot, type ModelPrecision } from '../src/embedding/onnx-embedder.js';
import { sentence } from './encoder-texts.js';

const BATCH_SIZES = [1, 20, 64];
const TEXTS = 64;
/** Texts per build and round: calls of one text are many, calls of 64 few. */
const CALL_TEXTS = 320;

interface Best {
  /** Wall milliseconds per text of the fastest call. */
  ms: number;
}

interface Graph {
  session: InferenceSession;
  /** The sentence vector: unnormalised in this build, normalised by the graph in earlier ones. */
  output: string;
}

async function openGraph(modelDir: string, precision: ModelPrecision, threads: number): Promise<Graph> {
  const session = await openSession(path.join(modelDir, MODEL_FILES[precision]), threads, 'build it first');
  return { session, output: session.outputNames.includes(UNNORMALISED_OUTPUT) ? UNNORMALISED_OUTPUT : 'sentence_embedding' };
}

async function run(graph: Graph, Tensor: typeof import('onnxruntime-node').Tensor, batch: number[][]): Promise<void> {
  const { inputIds, mask, seq } = paddedInputs(batch, 0);
  const dims = [batch.length, seq];
  const out = await graph.session.run({ input_ids: new Tensor('int64', inputIds, dims), attention_mask: new Tensor('int64', mask, dims) }, [graph.output]);
  const data = out[graph.output]!.data as Float32Array;
  for (let row = 0; row < batch.length; row++) normalise(data.slice(row * 512, (row + 1) * 512));
}

/**
 * The fastest of many calls on the same `perCall` texts, per text. On a shared machine a call is
 * often preempted or slowed by a neighbour; the fastest call is the one that ran on its own, and
 * so the figure that compares across a loaded run.
 */
async function fastestCall(graph: Graph, Tensor: typeof import('onnxruntime-node').Tensor, batch: number[][], calls: number, best: Best): Promise<void> {
  for (let call = 0; call < calls; call++) {
    const started = performance.now();
    await run(graph, Tensor, batch);
    best.ms = Math.min(best.ms, (performance.now() - started) / batch.length);
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { a: { type: 'string' }, b: { type: 'string' }, precision: { type: 'string', default: 'int8' }, threads: { type: 'string', default: '1' }, rounds: { type: 'string', default: '10' } },
  });
  if (!values.a || !values.b) throw new RangeError('--a and --b name the two model directories');
  const precision = values.precision as ModelPrecision;
  if (!MODEL_PRECISIONS.includes(precision)) throw new RangeError(`--precision must be one of ${MODEL_PRECISIONS.join(', ')}`);
  const intraOpThreads = Number(values.threads);
  const rounds = Number(values.rounds);
  const { Tensor } = await onnxRuntime();
  const tokenizerJson = JSON.parse(await readFile(path.join(packageRoot(), 'models/use-lite/tokenizer.json'), 'utf8')) as { model: { vocab: [string, number][] } };
  const tokenizer = new UseLiteTokenizer(tokenizerJson.model.vocab);
  const ids = Array.from({ length: TEXTS }, (_, i) => tokenizer.encode(sentence(i)));
  const builds = await Promise.all([values.a, values.b].map((modelDir) => openGraph(modelDir, precision, intraOpThreads)));
  for (const graph of builds) await run(graph, Tensor, ids.slice(0, 64)); // warm up
    console.log(`precision ${precision}, intra-op threads ${intraOpThreads}, short sentences, fastest call of ${rounds} interleaved rounds`);
    console.log('| texts per call | a ms/text | b ms/text | b/a |');
    console.log('|---|---|---|---|');
    for (const perCall of BATCH_SIZES) {
      const batch = ids.slice(0, perCall);
      const calls = Math.max(2, Math.round(CALL_TEXTS / perCall));
      const best: Best[] = builds.map(() => ({ ms: Infinity }));
      for (let round = 0; round < rounds; round++) {
        // Alternate which goes first, so neither always runs on the warmer caches.
        const order = round % 2 === 0 ? [0, 1] : [1, 0];
        for (const k of order) await fastestCall(builds[k]!, Tensor, batch, calls, best[k]!);
      }
      const [a, b] = best as [Best, Best];
      console.log(`| ${perCall} | ${a.ms.toFixed(4)} | ${b.ms.toFixed(4)} | ${(b.ms / a.ms).toFixed(3)} |`);
    }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
