import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HashEmbedder } from '../../../src/embedding/hash-embedder.js';
import { QA_FILES, runQa, type QaOptions } from '../../../eval/qa/qa-run.js';
import type { QaRecord } from '../../../eval/qa/qa-report.js';
import { build } from '../../support/helper.js';
import { tinyLocomo } from '../tiny-locomo.js';
import { startFakeLlm, type FakeLlm } from './fake-llm.js';

/** One question per kind of endpoint behaviour, on the tiny conversation. */
const QUESTIONS = [
  // Slow on its first request: the client times out and asks again.
  { question: 'What did Melanie watch while camping by the lake?', answer: 'meteor shower', evidence: ['D1:2'], category: 4 },
  // Rate limited once, with retry-after.
  { question: 'What instrument is Caroline learning?', answer: 'violin', evidence: ['D1:5'], category: 1 },
  // Always 500: failed, not judged.
  { question: 'What did Luna the dog chew?', answer: 'shoes', evidence: ['D1:6'], category: 2 },
  // No gold answer: left out.
  { question: 'What did Melanie adopt?', adversarial_answer: 'nothing', evidence: ['D1:3'], category: 5 },
  // Nothing said it: the judge says WRONG.
  { question: 'What colour is the car Caroline drives?', answer: 'purple', evidence: ['D1:1'], category: 3 },
  { question: 'Where do the kids paint pottery?', answer: 'studio', evidence: ['D1:4'], category: 4 },
];

describe('the QA score against a fake OpenAI-compatible endpoint', () => {
  let dir: string;
  let llm: FakeLlm;
  let options: QaOptions;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eval-qa-'));
    await writeFile(join(dir, 'tiny.json'), JSON.stringify(tinyLocomo(QUESTIONS, 'conv-qa')));
    llm = await startFakeLlm({ slowWord: 'camping', slowMs: 4000, limitedWord: 'instrument', retryAfterSeconds: 0.3, failingWord: 'Luna' });
    options = {
      benchmark: 'locomo',
      data: join(dir, 'tiny.json'),
      out: join(dir, 'out'),
      embedderKind: 'hash',
      makeEmbedder: () => new HashEmbedder(),
      command: 'test',
      log: () => {},
      quiet: true,
      llmUrl: llm.baseUrl,
      model: 'answerer',
      judgeModel: 'judge',
      topK: 20,
      wordBudget: 1000,
      llmConcurrency: 3,
      llmTimeoutMs: 1000,
      llmRetries: 2,
      llmBackoffMs: 20,
    };
  });

  afterAll(async () => {
    await llm.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers, judges and scores J per category, with recall and tokens beside it, surviving slow, limited and failing requests', async () => {
    const results = await runQa(options);
    // Every turn fits in the prompt, so the answer holds each fact that was said: 3 of the 4 judged.
    expect(results.questions).toBe(5);
    expect(results.judged).toBe(4);
    expect(results.failed).toBe(1);
    expect(results.without_gold).toBe(1);
    expect(results.j).toBeCloseTo(75);
    expect(results.by_category['4']).toMatchObject({ questions: 2, judged: 2, j: 100 });
    expect(results.by_category['3']).toMatchObject({ questions: 1, judged: 1, j: 0 });
    expect(results.by_category['2']).toMatchObject({ questions: 1, judged: 0, j: null });
    expect(results.by_category['1']).toMatchObject({ j: 100 });
    expect(results.evidence_in_prompt).toBe(100);
    expect(results.first_errors[0]).toContain('answered 500');

    // The slow request was abandoned and asked again; the limited one waited for its retry-after.
    const camping = llm.requests.filter((r) => r.model === 'answerer' && r.question.includes('camping'));
    expect(camping.map((r) => r.status)).toEqual([0, 200]);
    const limited = llm.requests.filter((r) => r.model === 'answerer' && r.question.includes('instrument'));
    expect(limited.map((r) => r.status)).toEqual([429, 200]);
    expect(limited[1].at - limited[0].at).toBeGreaterThanOrEqual(280);
    // The failing one was tried once and retried twice, for the answer only.
    expect(llm.requests.filter((r) => r.question.includes('Luna')).map((r) => `${r.model} ${r.status}`)).toEqual(['answerer 500', 'answerer 500', 'answerer 500']);

    // Tokens are the endpoint's usage of the replies the run kept.
    expect(results.tokens.questions_with_usage).toBe(4);
    expect(results.tokens.total).toBe([...llm.lastUsage.values()].reduce((sum, n) => sum + n, 0));
    expect(results.calls).toEqual({ made: 8, cached: 0 });

    const report = await readFile(join(options.out, QA_FILES.report), 'utf8');
    expect(report).toContain('## J: 75.0');
    expect(report).toContain('| 4 single-hop | 2 | 2 | 100.0 | 100.0 |');
    expect(report).toContain('| 2 temporal | 1 | 0 | – | 100.0 |');
    expect(report).toContain('**1 questions failed**');
    expect(report).toContain('Reply with one word: CORRECT or WRONG.');
    const json = JSON.parse(await readFile(join(options.out, QA_FILES.results), 'utf8'));
    expect(json.j).toBeCloseTo(results.j!);
    const records = (await readFile(join(options.out, QA_FILES.questions), 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as QaRecord);
    const car = records.find((r) => r.question.includes('car'))!;
    expect(car.verdict).toBe('WRONG');
    expect(car.memories).toBe(12);
    expect(car.answer).toContain('violin');
  });

  it('costs nothing on a rerun but the questions that failed, and resumes an interrupted cache', async () => {
    const before = llm.requests.length;
    const rerun = await runQa(options);
    expect(rerun.calls).toEqual({ made: 0, cached: 8 });
    expect(llm.requests.slice(before).every((r) => r.question.includes('Luna'))).toBe(true);
    expect(rerun.j).toBeCloseTo(75);

    // An interruption: the cache keeps two replies and half of a third.
    const cachePath = join(options.out, QA_FILES.cache);
    const lines = (await readFile(cachePath, 'utf8')).trim().split('\n');
    await writeFile(cachePath, `${lines[0]}\n${lines[1]}\n${lines[2].slice(0, 20)}`);
    const resumed = await runQa(options);
    expect(resumed.calls).toEqual({ made: 6, cached: 2 });
    expect(resumed.j).toBeCloseTo(75);
    expect((await runQa(options)).calls).toEqual({ made: 0, cached: 8 });
  });

  it('puts fewer memories in the prompt under a small word budget, and recall in the prompt falls with it', async () => {
    const small = await runQa({ ...options, out: join(dir, 'small'), wordBudget: 12, llmRetries: 0 });
    const records = (await readFile(join(dir, 'small', QA_FILES.questions), 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as QaRecord);
    expect(Math.max(...records.map((r) => r.memories))).toBeLessThan(12);
    expect(records.every((r) => r.memories >= 1)).toBe(true);
    expect(small.evidence_in_prompt).toBeLessThan(100);
  });

  it("scores the same through a server's Add/Search contract (--url), its hits matched back to turns by content", async () => {
    const { app } = await build();
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    const before = llm.requests.length;
    const overHttp = await runQa({ ...options, url, out: join(dir, 'http') });
    expect(overHttp.mode).toBe('http');
    expect([overHttp.questions, overHttp.judged, overHttp.failed]).toEqual([5, 4, 1]);
    expect(overHttp.j).toBe(75);
    expect(overHttp.evidence_in_prompt).toBe(100);
    // Its own cache: every answer and judgement was asked of the endpoint again.
    expect(overHttp.calls).toEqual({ made: 8, cached: 0 });
    expect(llm.requests.length).toBeGreaterThan(before);
  });
});
