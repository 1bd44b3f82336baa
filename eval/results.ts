import type { BenchmarkName, CategorySpec, SkipCount } from './benchmark.js';
import type { MatchStats } from './content-matcher.js';
import type { LatencySummary, MetricSet, QuestionScore } from './metrics.js';
import { summarize } from './metrics.js';

/** What `<out>/results.json` holds; report.md and recall.svg are drawn from it alone. */
export interface EvalResults {
  benchmark: BenchmarkName;
  /** The command line that produced this file (a token, if any, masked). */
  command: string;
  commit: string;
  startedAt: string;
  durationSeconds: number;
  data: string;
  mode: 'in-process' | 'http';
  url?: string;
  embedder?: { kind: string; modelId: string; dimensions: number };
  limit: number | null;
  concurrency: { adds: number; searches: number };
  topK: number;
  dataset: DatasetSummary;
  ingest: IngestSummary;
  systems: SystemResult[];
}

export interface DatasetSummary {
  users: number;
  sessions: number;
  turns: number;
  adds: number;
  questions: number;
  questionsByCategory: Record<string, number>;
  categories: CategorySpec[];
  headlineLabel: string;
  skipped: SkipCount[];
  notes: string[];
}

export interface IngestSummary {
  wallSeconds: number;
  addsPerSecond: number;
  /** Units the service stored (unknown over HTTP). */
  units?: number;
  /** Adds the target already held (a reused data directory): then the timings are not ingest's. */
  alreadyStored: number;
  latency: LatencySummary;
}

export interface QueryTimings extends LatencySummary {
  wallSeconds: number;
  perSecond: number;
}

export interface SystemResult {
  name: string;
  kind: 'service' | 'peer' | 'server';
  description: string;
  /** Weight overrides, or the peer's configuration. */
  configuration: string;
  /** Overrides equal to the default: that ablation changes nothing. */
  noOpOverrides?: string[];
  status: 'ok' | 'failed';
  error?: string;
  /** Headline categories only (LoCoMo 1-4; LongMemEval all but abstention). */
  headline?: MetricSet;
  /** Every scored question. */
  all?: MetricSet;
  byCategory?: Record<string, MetricSet>;
  query?: QueryTimings;
  /** Peers: the time to index the exported units. */
  build?: { seconds: number; units: number };
  /** Every evidence rank equals the hybrid's on every question: the term never moved anything here. */
  sameAsHybrid?: boolean;
  /** Share of returned units that could not be mapped to any turn. */
  unmappedShare?: number;
  matching?: MatchStats;
}

export function summarizeScores(
  scores: readonly QuestionScore[],
  categories: readonly CategorySpec[],
): Pick<SystemResult, 'headline' | 'all' | 'byCategory'> {
  const headlineIds = new Set(categories.filter((c) => c.headline).map((c) => c.id));
  const byCategory: Record<string, MetricSet> = {};
  for (const category of categories) {
    const inCategory = scores.filter((score) => score.category === category.id);
    if (inCategory.length > 0) byCategory[category.id] = summarize(inCategory);
  }
  return {
    headline: summarize(scores.filter((score) => headlineIds.has(score.category))),
    all: summarize(scores),
    byCategory,
  };
}
