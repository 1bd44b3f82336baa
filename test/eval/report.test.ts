import { describe, expect, it } from 'vitest';
import { recallChartSpec, renderSvg } from '../../eval/chart.js';
import { summarize, summarizeLatency, type QuestionScore } from '../../eval/metrics.js';
import { renderReport } from '../../eval/report.js';
import { summarizeScores, type EvalResults } from '../../eval/results.js';
import { LOCOMO_CATEGORIES } from '../../eval/datasets/locomo.js';

const scores: QuestionScore[] = [
  { questionId: 'a#0', category: '1', turnRanks: [1, 7], sessionRanks: [1], returned: 100 },
  { questionId: 'a#1', category: '4', turnRanks: [3], sessionRanks: [2], returned: 100 },
  { questionId: 'a#2', category: '5', turnRanks: [null], sessionRanks: [null], returned: 100 },
];

function results(benchmark: 'locomo' | 'longmemeval'): EvalResults {
  const timings = { ...summarizeLatency([1, 2, 3]), wallSeconds: 0.1, perSecond: 30 };
  return {
    benchmark,
    command: 'npm run eval -- locomo --data x.json --out /tmp/e',
    commit: 'abc123',
    startedAt: '2026-01-01T00:00:00.000Z',
    durationSeconds: 75,
    data: 'x.json',
    mode: 'in-process',
    embedder: { kind: 'hash', modelId: 'hash-embedder@1/64', dimensions: 64 },
    limit: null,
    concurrency: { adds: 16, searches: 32 },
    topK: 100,
    dataset: {
      users: 1,
      sessions: 2,
      turns: 10,
      adds: 2,
      questions: 3,
      questionsByCategory: { '1': 1, '4': 1, '5': 1 },
      categories: LOCOMO_CATEGORIES,
      headlineLabel: 'categories 1-4',
      skipped: [{ reason: 'questions without usable evidence', count: 2 }],
      notes: [],
    },
    ingest: { wallSeconds: 1, addsPerSecond: 2, units: 10, alreadyStored: 0, latency: summarizeLatency([10, 20]) },
    systems: [
      {
        name: 'hybrid',
        kind: 'service',
        description: 'the service',
        configuration: 'defaults',
        noOpOverrides: [],
        status: 'ok',
        ...summarizeScores(scores, LOCOMO_CATEGORIES),
        query: timings,
      },
      {
        name: 'no-decay',
        kind: 'service',
        description: 'without decay',
        configuration: 'decayWeight=0',
        noOpOverrides: ['decayWeight'],
        status: 'ok',
        ...summarizeScores(scores, LOCOMO_CATEGORIES),
        query: timings,
      },
      { name: 'lancedb', kind: 'peer', description: 'peer', configuration: '', status: 'failed', error: 'Error: no native binary' },
    ],
  };
}

describe('summarizeScores', () => {
  it('keeps category 5 out of the headline', () => {
    const summary = summarizeScores(scores, LOCOMO_CATEGORIES);
    expect(summary.headline?.questions).toBe(2);
    expect(summary.all?.questions).toBe(3);
    expect(summary.headline?.turn.recall[5]).toBeCloseTo(0.75);
    expect(Object.keys(summary.byCategory ?? {})).toEqual(['1', '4', '5']);
    expect(summary.byCategory?.['5']).toEqual(summarize([scores[2]]));
  });
});

describe('renderReport', () => {
  it('has the command, the commit, the headline table, category 5 apart, timings and failures', () => {
    const report = renderReport(results('locomo'));
    expect(report).toContain('`npm run eval -- locomo --data x.json --out /tmp/e`');
    expect(report).toContain('Commit: `abc123`');
    expect(report).toContain('## Headline: categories 1-4, 2 questions');
    expect(report).toContain('| hybrid | 25.0 | 75.0 | 100.0 | 100.0 | 100.0 | 100.0 |');
    expect(report).toContain('## Category 5 (adversarial), reported apart: 1 questions');
    expect(report).toContain('| hybrid | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 | 0.0 | 0.000 | 0.000 |');
    expect(report).toContain('**no-decay** measures nothing new: decayWeight already has that value by default');
    expect(report).toContain('**lancedb could not run here**: Error: no native binary');
    expect(report).toContain('Left out: 2 questions without usable evidence');
    expect(report).toContain('| hybrid | 3 | 0.1 | 30.0 | 2.00 | 3.00 | 3.00 |  |');
  });

  it('adds session-level tables for LongMemEval', () => {
    const report = renderReport(results('longmemeval'));
    expect(report).toContain("## Session level (LongMemEval's official granularity)");
    expect(report).toContain('any@1 | any@5');
  });

  it('gives LoCoMo a session level, and both sets the share of evidence sessions found', () => {
    const locomo = renderReport(results('locomo'));
    expect(locomo).toContain('## Session level\n');
    expect(renderReport(results('longmemeval'))).toContain('## Share of evidence sessions found');
    // Category 1-4 questions: sessions ranked 1 and 2 of distinct sessions; unit ranks absent in these scores.
    expect(locomo).toContain('| hybrid | 50.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 |  |  |  |  |  |  |  |  |  |  |  |  |');
    const withUnits = results('locomo');
    withUnits.systems[0] = { ...withUnits.systems[0], ...summarizeScores(scores.map((score, i) => ({ ...score, sessionUnitRanks: [[1], [7], [null]][i] })), LOCOMO_CATEGORIES) };
    expect(renderReport(withUnits)).toContain('| hybrid | 50.0 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 50.0 | 50.0 | 100.0 | 100.0 | 100.0 | 100.0 | 50.0 | 50.0 | 100.0 | 100.0 | 100.0 | 100.0 |');
  });
});

describe('recall chart', () => {
  it('renders recall@k lines per system to SVG', async () => {
    const spec = recallChartSpec(results('longmemeval'));
    const values = (spec.data as { values: Array<{ system: string; panel: string }> }).values;
    expect(new Set(values.map((v) => v.system))).toEqual(new Set(['hybrid', 'no-decay']));
    expect(new Set(values.map((v) => v.panel)).size).toBe(2);
    const svg = await renderSvg(spec);
    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg).toContain('hybrid');
    expect(svg).toContain('recall@k per system');
  });
});
