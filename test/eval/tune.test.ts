import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { renderTuneReport, tune } from '../../eval/tune.js';

/** Two tiny LoCoMo-shaped conversations, one fold each, with one obvious evidence turn per question. */
function conversation(id: string, facts: Array<[string, string]>, questions: Array<[string, string]>): unknown {
  return {
    sample_id: id,
    conversation: {
      speaker_a: 'Caroline',
      speaker_b: 'Melanie',
      session_1_date_time: '1:56 pm on 8 May, 2023',
      session_1: facts.map(([speaker, text], i) => ({ speaker, dia_id: `D1:${i + 1}`, text })),
    },
    qa: questions.map(([question, evidence]) => ({ question, answer: 'x', evidence: [evidence], category: 4 })),
  };
}

describe('tune (in-process, hash embedder)', () => {
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'eval-tune-'));
    const data = [
      conversation('conv-a', [['Caroline', 'I started the violin yesterday.'], ['Melanie', 'What music do you like?'], ['Caroline', 'Jazz, mostly.']], [
        ['What instrument did Caroline start?', 'D1:1'],
        ['What music does Caroline like?', 'D1:3'],
      ]),
      conversation('conv-b', [['Melanie', 'Our dog Luna chewed my shoes.'], ['Caroline', 'Did Luna chew anything else?'], ['Melanie', 'A pillow as well.']], [
        ['What did Luna chew?', 'D1:1'],
        ['What else did Luna chew?', 'D1:3'],
      ]),
    ];
    await writeFile(join(dir, 'two.json'), JSON.stringify(data));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('searches every grid point once, chooses per held-out fold, and reruns on the same data directory to the same figures', async () => {
    const logged: string[] = [];
    const run = () =>
      tune({
        benchmark: 'locomo',
        data: join(dir, 'two.json'),
        dataDir: join(dir, 'service-data'),
        folds: 2,
        grid: [['questionTurnPenalty', [0, 0.5]], ['decayWeight', [0]]],
        makeEmbedder: () => new HashEmbedder(),
        command: 'test',
        log: (line) => logged.push(line),
        quiet: true,
      });
    const results = await run();
    expect(results.points.map((p) => p.overrides)).toEqual([{}, { questionTurnPenalty: 0 }, { questionTurnPenalty: 0.5 }]);
    expect(results.folds.map((f) => f.users)).toEqual([['conv-a'], ['conv-b']]);
    expect(results.folds.every((f) => f.questions === 2)).toBe(true);
    expect(results.crossValidated.headline.questions).toBe(4);
    expect(results.points[0].headline.words?.recall[500]).toBeGreaterThan(0);
    const v = results.foldsVersusDefault;
    expect(v.gained + v.tied + v.lost).toBe(2);
    const report = renderTuneReport(results);
    expect(report).toContain('| 0 | conv-a | 2 |');
    expect(report).toContain('cross-validated');
    // The same data directory: nothing is stored twice and the figures are the same.
    logged.length = 0;
    const again = await run();
    expect(logged).toContainEqual(expect.stringMatching(/^ingest: 0 of \d+ Adds stored now/));
    expect(again.points.map((p) => p.headline.turn.recall[10])).toEqual(results.points.map((p) => p.headline.turn.recall[10]));
  }, 60_000);
});
