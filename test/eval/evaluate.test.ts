import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { evaluate } from '../../eval/evaluate.js';
import { tinyLocomo } from './tiny-locomo.js';

/** Each question points at one obvious turn of the tiny conversation. */
const QUESTIONS = [
  { question: 'What did Melanie watch while camping by the lake?', answer: 'meteor shower', evidence: ['D1:2'], category: 4 },
  { question: 'What instrument is Caroline learning?', answer: 'violin', evidence: ['D1:5'], category: 1 },
  { question: 'What did Luna the dog chew?', answer: 'shoes', evidence: ['D1:6; D1:4'], category: 2 },
  { question: 'What did Melanie adopt?', adversarial_answer: 'nothing', evidence: ['D1:3'], category: 5 },
  { question: 'No evidence here', answer: 'x', evidence: [], category: 3 },
];

describe('evaluate (in-process, hash embedder)', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eval-e2e-'));
    await writeFile(join(dir, 'tiny.json'), JSON.stringify(tinyLocomo(QUESTIONS)));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('ingests once, runs every system and scores each question', async () => {
    const { results, questionScores } = await evaluate({
      benchmark: 'locomo',
      data: join(dir, 'tiny.json'),
      embedderKind: 'hash',
      makeEmbedder: () => new HashEmbedder(),
      command: 'test',
      log: () => {},
      quiet: true,
    });
    expect(results.dataset).toMatchObject({ users: 1, sessions: 2, turns: 12, adds: 2, questions: 4 });
    expect(results.ingest.units).toBe(12);
    const names = results.systems.map((s) => s.name);
    expect(names).toEqual(['hybrid', 'no-collapse', 'bm25', 'dense', 'no-neighbours', 'no-context', 'no-speaker', 'no-disclosure', 'no-time-cues', 'no-catch-up', 'no-decay', 'with-decay', 'no-event-periods', 'no-question-penalty', 'no-expansion', 'no-importance', 'orama', 'lancedb']);
    for (const system of results.systems) {
      expect(system.status, `${system.name}: ${system.error}`).toBe('ok');
      expect(system.headline?.questions).toBe(3);
      expect(system.byCategory?.['5']?.questions).toBe(1);
      expect(system.unmappedShare).toBe(0);
      // Every unit is returned (12 < top_k), so every evidence turn is found by rank 12.
      expect(system.headline?.turn.recall[25]).toBe(1);
      // Word budgets need the returned contents: the service's systems have them, peers do not.
      expect(system.headline?.words !== undefined).toBe(system.kind === 'service');
    }
    const bm25 = results.systems.find((s) => s.name === 'bm25')!;
    expect(bm25.headline!.turn.recall[1]).toBeGreaterThan(0.5);
    expect(questionScores).toHaveLength(17);
    // Every unit has the default importance, so switching the multiplier off changes nothing.
    expect(results.systems.find((s) => s.name === 'no-importance')!.sameAsHybrid).toBe(true);
  }, 60_000);

  it('reuses a data directory without storing anything twice', async () => {
    const run = () =>
      evaluate({
        benchmark: 'locomo',
        data: join(dir, 'tiny.json'),
        systems: ['hybrid'],
        dataDir: join(dir, 'service-data'),
        embedderKind: 'hash',
        makeEmbedder: () => new HashEmbedder(),
        command: 'test',
        log: () => {},
        quiet: true,
      });
    const first = await run();
    const second = await run();
    expect(first.results.ingest.alreadyStored).toBe(0);
    expect(second.results.ingest.alreadyStored).toBe(2);
    expect(second.results.ingest.units).toBe(0);
    expect(second.results.systems[0].headline).toEqual(first.results.systems[0].headline);
  }, 60_000);

  it('honours --systems and --limit', async () => {
    const { results } = await evaluate({
      benchmark: 'locomo',
      data: join(dir, 'tiny.json'),
      limit: 2,
      systems: ['bm25', 'orama'],
      embedderKind: 'hash',
      makeEmbedder: () => new HashEmbedder(),
      command: 'test',
      log: () => {},
      quiet: true,
    });
    expect(results.systems.map((s) => s.name)).toEqual(['bm25', 'orama']);
    expect(results.dataset.questions).toBe(2);
  }, 60_000);
});
