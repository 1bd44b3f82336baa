import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encoderPrefix, MAX_TEXT_CHARS, OnnxEmbedder, UseLiteTokenizer } from '../../src/embedding/onnx-embedder.js';

// Uses the real model in models/use-lite, built by `npm run build:model` (part of npm install).

function dot(a: Float32Array, b: Float32Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i]! * b[i]!;
  return s;
}

describe('OnnxEmbedder', () => {
  const embedder = new OnnxEmbedder();

  beforeAll(async () => {
    await embedder.ready();
  });
  afterAll(async () => {
    await embedder.close();
  });

  it('returns 512-dim unit vectors and names its model', async () => {
    const [v] = await embedder.embed(['I love my dog']);
    expect(embedder.dimensions).toBe(512);
    expect(embedder.modelId).toMatch(/^use-lite-onnx@\d+$/);
    expect(v).toBeInstanceOf(Float32Array);
    expect(v!.length).toBe(512);
    expect(Math.sqrt(dot(v!, v!))).toBeCloseTo(1, 5);
  });

  it('matches the original TF.js model', async () => {
    // First components of @energetic-ai/embeddings' output for this text.
    const [v] = await embedder.embed(['Hello world.']);
    const expected = [-0.047307, -0.058243, -0.004418, -0.04962, 0.016603, -0.056559, 0.0581, 0.04493];
    expected.forEach((x, i) => expect(Math.abs(v![i]! - x)).toBeLessThan(1e-4));
  });

  it('is deterministic', async () => {
    const [a] = await embedder.embed(['The weather is nice today.']);
    const [b] = await embedder.embed(['The weather is nice today.']);
    expect(Array.from(b!)).toEqual(Array.from(a!));
  });

  it('gives the same vector alone and in a padded batch', async () => {
    const text = 'Short one.';
    const [alone] = await embedder.embed([text]);
    const batch = await embedder.embed([
      'A considerably longer sentence that forces the short one to be padded in the same batch, by quite a lot.',
      text,
      'Medium length sentence here.',
    ]);
    expect(dot(alone!, batch[1]!)).toBeGreaterThan(0.99999);
  });

  it('scores related texts above unrelated ones', async () => {
    const [dog, puppy, market] = await embedder.embed(['I love my dog', 'My puppy is adorable', 'The stock market fell today']);
    expect(dot(dog!, puppy!)).toBeGreaterThan(dot(dog!, market!) + 0.2);
    expect(dot(puppy!, dog!)).toBeGreaterThan(dot(puppy!, market!) + 0.2);
  });

  it('keeps input order across batches sorted by length', async () => {
    const texts = Array.from({ length: 9 }, (_, i) => `${'word '.repeat((i * 7) % 9 + 1)}number ${i}`);
    const small = new OnnxEmbedder({ batchSize: 2 });
    try {
      const batched = await small.embed(texts);
      const singles = await Promise.all(texts.map(async (t) => (await embedder.embed([t]))[0]!));
      batched.forEach((v, i) => expect(dot(v, singles[i]!)).toBeGreaterThan(0.99999));
    } finally {
      await small.close();
    }
  });

  it('truncates texts past 128 tokens instead of failing', async () => {
    const long = Array.from({ length: 80 }, (_, i) => `sentence ${i} here.`).join(' ');
    const [a, b] = await embedder.embed([long, `${long} and some more words at the end`]);
    // Both are cut to the same first 128 tokens.
    expect(dot(a!, b!)).toBeGreaterThan(0.99999);
  });

  it('reads at most MAX_TEXT_CHARS of a huge text, so it costs what a normal one does', async () => {
    const huge = 'I went hiking with my sister near the lake last summer. '.repeat(130_000); // ~7 MB
    expect(encoderPrefix(huge).length).toBe(MAX_TEXT_CHARS);
    // Before the cut, tokenizing 7 MB took tens of seconds (timings: bench/README.md).
    const [v] = await embedder.embed([huge]);
    const [prefix] = await embedder.embed([huge.slice(0, MAX_TEXT_CHARS)]);
    expect(dot(v!, prefix!)).toBeGreaterThan(0.99999);
  });

  it('gives a long text the ids of its whole prefix when it tokenizes only the first 1,024 characters', async () => {
    const vocab = (JSON.parse(readFileSync(path.join(embedder.modelDir, 'tokenizer.json'), 'utf8')) as { model: { vocab: [string, number][] } }).model.vocab;
    const tokenizer = new UseLiteTokenizer(vocab);
    const long = Array.from({ length: 200 }, (_, i) => `On day ${i} we talked about painting, hiking and the kids' school.`).join(' ');
    const [fast] = await embedder.embed([long]);
    // What the encoder would get from the whole 4,096-character prefix.
    const ids = tokenizer.encode(long.slice(0, MAX_TEXT_CHARS)).slice(0, 128);
    const [viaIds] = await embedder.embed([long.slice(0, 1024)]);
    expect(tokenizer.encode(long.slice(0, 1024)).slice(0, 128)).toEqual(ids);
    expect(dot(fast!, viaIds!)).toBeGreaterThan(0.99999);
  });

  it('never cuts a surrogate pair in half', () => {
    const text = `${'a'.repeat(MAX_TEXT_CHARS - 1)}😀tail`;
    expect(encoderPrefix(text)).toBe('a'.repeat(MAX_TEXT_CHARS - 1));
    expect(encoderPrefix('short 😀')).toBe('short 😀');
  });

  it('splits passes by padded tokens and gives the same vectors', async () => {
    const texts = Array.from({ length: 12 }, (_, i) => `${'some words '.repeat(i + 1)}end ${i}`);
    const tight = new OnnxEmbedder({ batchTokens: 40 });
    try {
      const split = await tight.embed(texts);
      const whole = await embedder.embed(texts);
      split.forEach((v, i) => expect(dot(v, whole[i]!)).toBeGreaterThan(0.99999));
    } finally {
      await tight.close();
    }
  });

  it('runs the int8 build close to the float one, under its own model id', async () => {
    const int8 = new OnnxEmbedder({ precision: 'int8' });
    try {
      const texts = ['I love my dog', 'We are planning a trip to Japan in May.', 'Hello world.'];
      const [a, b] = [await embedder.embed(texts), await int8.embed(texts)];
      expect(int8.modelId).not.toBe(embedder.modelId);
      a.forEach((v, i) => {
        expect(Math.sqrt(dot(b[i]!, b[i]!))).toBeCloseTo(1, 5);
        expect(dot(v, b[i]!)).toBeGreaterThan(0.98);
        expect(dot(v, b[i]!)).toBeLessThan(0.999999); // really the quantized model, not the float file
      });
    } finally {
      await int8.close();
    }
  });

  it('rejects an unknown precision and bad pass sizes', () => {
    expect(() => new OnnxEmbedder({ precision: 'fp16' as 'fp32' })).toThrow(/precision/);
    expect(() => new OnnxEmbedder({ batchTokens: 0 })).toThrow(/batchTokens/);
  });

  it('rejects empty and whitespace-only texts', async () => {
    await expect(embedder.embed([''])).rejects.toThrow(/empty or whitespace-only/);
    await expect(embedder.embed(['fine', ' \n\t '])).rejects.toThrow(/text 1/);
  });

  it('returns nothing for no texts', async () => {
    expect(await embedder.embed([])).toEqual([]);
  });

  it('tokenizes exactly like the original, quirks included', () => {
    const vocab = (JSON.parse(readFileSync(path.join(embedder.modelDir, 'tokenizer.json'), 'utf8')) as { model: { vocab: [string, number][] } }).model.vocab;
    const tokenizer = new UseLiteTokenizer(vocab);
    // Ids from @energetic-ai/embeddings 0.2.0. Ties ("!!!!!!!") and a leading ":)" are where a
    // standard Unigram tokenizer (transformers.js) disagrees with it.
    const cases: [string, number[]][] = [
      ['Hello world.', [341, 4125, 311, 6]],
      ['wow !!!!!!! ok', [6240, 30, 3044, 1300, 2303]],
      [':) sounds good', [30, 57, 52, 1221, 129]],
      ['   leading spaces', [30, 30, 30, 2428, 1016, 7]],
      ['😀😀😀 emoji party 🎉🎉', [30, 0, 299, 451, 2501, 1152, 30, 0]],
      ['Café <s> naïve ﬁ ½', [823, 209, 1133, 4787, 7, 1431, 1216, 0, 105, 1480, 207, 7935, 288]],
    ];
    for (const [text, ids] of cases) expect(tokenizer.encode(text), text).toEqual(ids);
  });
});

describe('OnnxEmbedder without a built model', () => {
  it('rejects ready() with a hint to build the model', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'no-model-'));
    try {
      const embedder = new OnnxEmbedder({ modelDir: dir });
      await expect(embedder.ready()).rejects.toThrow(/npm run build:model/);
      await expect(embedder.embed(['hello'])).rejects.toThrow(/npm run build:model/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
