import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isAppError } from '../../src/errors.js';
import { createLocalEncoder } from '../../src/embedding/local-encoder.js';
import { OnnxEmbedder } from '../../src/embedding/onnx-embedder.js';
import { SentenceTransformerEmbedder } from '../../src/embedding/sentence-transformer-embedder.js';
import { WorkerEmbedder } from '../../src/embedding/worker-embedder.js';
import { CLS_ID, HIDDEN, SEP_ID, tokenStates, VOCAB, writeTinyBert, type TinyBertWeights } from '../support/tiny-bert.js';

const id = (token: string) => {
  const at = VOCAB.indexOf(token);
  if (at < 0) throw new Error(`${token} is not in the test vocabulary`);
  return at;
};

/** What the model should give for these WordPiece tokens: pooled by hand from the weights, normalised. */
function expected(weights: TinyBertWeights, tokens: string[], pooling: 'mean' | 'cls'): number[] {
  const states = tokenStates(weights, [CLS_ID, ...tokens.map(id), SEP_ID]);
  const pooled = pooling === 'cls' ? Array.from(states[0]!) : Array.from({ length: HIDDEN }, (_, i) => states.reduce((sum, s) => sum + s[i]!, 0) / states.length);
  const norm = Math.hypot(...pooled);
  return pooled.map((x) => x / norm);
}

function expectClose(actual: Float32Array, wanted: number[]): void {
  expect(actual.length).toBe(wanted.length);
  wanted.forEach((x, i) => expect(Math.abs(actual[i]! - x)).toBeLessThan(1e-5));
}

describe('SentenceTransformerEmbedder (a tiny BERT built by the test)', () => {
  let root: string;
  let dir: string;
  let clsDir: string;
  let weights: TinyBertWeights;
  let embedder: SentenceTransformerEmbedder;

  beforeAll(async () => {
    // One folder for the whole file (the helper's tempDir goes after each test).
    root = await mkdtemp(path.join(os.tmpdir(), 'memorypool-tiny-bert-'));
    dir = path.join(root, 'mean');
    clsDir = path.join(root, 'cls');
    weights = await writeTinyBert(dir, { maxSeqLength: 8 });
    await writeTinyBert(clsDir, { pooling: 'cls', maxSeqLength: 8 });
    embedder = new SentenceTransformerEmbedder({ modelDir: dir, queryPrefix: 'query: ' });
    await embedder.ready();
  });
  afterAll(async () => {
    await embedder.close();
    await rm(root, { recursive: true, force: true });
  });

  it('takes its dimensions from config.json and names the model', () => {
    expect(embedder.dimensions).toBe(HIDDEN);
    expect(embedder.modelId).toMatch(/^st-onnx:tiny-bert:model#[0-9a-f]{12}$/);
    expect(createLocalEncoder({ modelDir: dir }).modelId).toBe(embedder.modelId);
    // The built USE-lite folder (config.json stamped by build-model) stays USE-lite.
    expect(createLocalEncoder({})).toBeInstanceOf(OnnxEmbedder);
  });

  it('tokenises with the WordPiece vocabulary, mean-pools over real tokens and normalises', async () => {
    // "running" is not a word of the vocabulary: run ##n ##ing; capitals are lowered.
    const [v] = await embedder.embed(['My dogs running!']);
    expectClose(v!, expected(weights, ['my', 'dogs', 'run', '##n', '##ing', '!'], 'mean'));
  });

  it('pools the [CLS] token when 1_Pooling/config.json says so, or when the option overrides it', async () => {
    const cls = new SentenceTransformerEmbedder({ modelDir: clsDir });
    const overridden = new SentenceTransformerEmbedder({ modelDir: dir, pooling: 'cls' });
    try {
      const [fromConfig] = await cls.embed(['hello world']);
      const [fromOption] = await overridden.embed(['hello world']);
      expectClose(fromConfig!, expected(weights, ['hello', 'world'], 'cls'));
      expectClose(fromOption!, expected(weights, ['hello', 'world'], 'cls'));
      // The pooling decides the stored vectors, so it is part of the identity.
      expect(overridden.modelId).not.toBe(embedder.modelId);
    } finally {
      await cls.close();
      await overridden.close();
    }
  });

  it('gives a text the same vector alone and padded in a batch', async () => {
    const [alone] = await embedder.embed(['hello']);
    const batch = await embedder.embed(['my sister went to paris in may', 'hello', 'the cat']);
    expectClose(batch[1]!, Array.from(alone!));
  });

  it('truncates to max_seq_length keeping the closing [SEP]', async () => {
    // max_seq_length 8: [CLS], six words, [SEP].
    const [v] = await embedder.embed(['one two three four five the dog went home']);
    expectClose(v!, expected(weights, ['one', 'two', 'three', 'four', 'five', 'the'], 'mean'));
  });

  it('puts the query prefix before queries only', async () => {
    const [query] = await embedder.embed(['the dog'], { priority: 'query' });
    const [stored] = await embedder.embed(['the dog']);
    expectClose(query!, expected(weights, ['query', ':', 'the', 'dog'], 'mean'));
    expectClose(stored!, expected(weights, ['the', 'dog'], 'mean'));
  });

  it('puts the document prefix before stored texts, and changing it changes the model id', async () => {
    const e5 = new SentenceTransformerEmbedder({ modelDir: dir, queryPrefix: 'query: ', documentPrefix: 'passage: ' });
    try {
      const [stored] = await e5.embed(['the dog']);
      expectClose(stored!, expected(weights, ['passage', ':', 'the', 'dog'], 'mean'));
      expect(e5.modelId).not.toBe(embedder.modelId);
      // The query prefix is not: stored vectors do not depend on it.
      expect(new SentenceTransformerEmbedder({ modelDir: dir }).modelId).toBe(embedder.modelId);
    } finally {
      await e5.close();
    }
  });

  it('runs on the encoder thread with the query prefix passed through', async () => {
    const worker = new WorkerEmbedder({ modelDir: dir, queryPrefix: 'query: ' });
    try {
      expect(worker.modelId).toBe(embedder.modelId);
      // What batching sizes runs by: the folder's max_seq_length (USE-lite's 128 otherwise).
      expect(worker.maxTokens).toBe(8);
      expect(new WorkerEmbedder({}).maxTokens).toBeUndefined();
      const [query] = await worker.embed(['the dog'], { priority: 'query' });
      const [stored] = await worker.embed(['the dog']);
      expectClose(query!, expected(weights, ['query', ':', 'the', 'dog'], 'mean'));
      expectClose(stored!, expected(weights, ['the', 'dog'], 'mean'));
    } finally {
      await worker.close();
    }
  });

  it('refuses a folder without its ONNX file, saying what is missing', async () => {
    const broken = path.join(path.dirname(dir), 'broken');
    await writeTinyBert(broken);
    await rm(path.join(broken, 'onnx'), { recursive: true });
    let error: unknown;
    try {
      new SentenceTransformerEmbedder({ modelDir: broken });
    } catch (caught) {
      error = caught;
    }
    expect(isAppError(error) && error.code === 'EMBEDDER_UNAVAILABLE').toBe(true);
    expect((error as Error).message).toContain('onnx/model.onnx');
  });
});
