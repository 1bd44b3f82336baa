import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { MODEL_PRECISIONS, OnnxEmbedder } from '../../src/embedding/onnx-embedder.js';

// Uses the real model in models/use-lite, built by `npm run build:model` (part of npm install).
// A text's vector must not depend on what it was encoded with: the stored index would otherwise
// depend on how a client chunked its Adds, and a Search's answer on the load (issue 31). Both
// builds are held to bit-identity, since both reach it (scripts/model/quantize-int8.ts and the
// pooling in use-lite-onnx.ts say how).

const WORDS = ['I', 'we', 'Caroline', 'Melanie', 'painted', 'adopted', 'a', 'the', 'dog', 'sunset', 'yesterday', 'in', 'May', '2023', 'and', 'support', 'group', 'love', 'really', 'went', 'to', 'park', '!', '?', 'café', '😀', 'naïve'];
const text = fc.array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 60 }).map((words) => words.join(' '));

describe.each(MODEL_PRECISIONS)('the %s encoder', (precision) => {
  // Two intra-op threads, as a server with a free core runs it; the batch sizes the service uses.
  const embedder = new OnnxEmbedder({ precision, intraOpThreads: 2, batchSize: 64, batchTokens: 4096 });
  afterAll(() => embedder.close());

  it('gives every text the same vector alone and inside any batch', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(text, { minLength: 1, maxLength: 64 }), fc.nat(), async (batch, pick) => {
        const i = pick % batch.length;
        const [alone] = await embedder.embed([batch[i]!]);
        const inBatch = await embedder.embed(batch);
        expect(Array.from(inBatch[i]!)).toEqual(Array.from(alone!));
      }),
      { numRuns: 25, seed: 31 },
    );
  });

  it('gives a batch the same vectors in any order and split into any passes', async () => {
    const texts = fc.sample(text, { numRuns: 40, seed: 7 });
    const whole = await embedder.embed(texts);
    const reversed = await embedder.embed([...texts].reverse());
    const split = (await Promise.all([embedder.embed(texts.slice(0, 13)), embedder.embed(texts.slice(13))])).flat();
    whole.forEach((v, i) => {
      expect(Array.from(reversed[texts.length - 1 - i]!)).toEqual(Array.from(v));
      expect(Array.from(split[i]!)).toEqual(Array.from(v));
    });
  });
});
