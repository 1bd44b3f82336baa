import type { BenchmarkName, CategorySpec } from '../benchmark.js';
import type { EvalResults } from '../results.js';
import { mean } from '../metrics.js';
import type { TokenUsage } from './chat-client.js';
import { ANSWER_SYSTEM, ANSWER_USER, JUDGE_SYSTEM, JUDGE_USER } from './prompts.js';

/** One question's way through the QA score (a line of qa-questions.jsonl). */
export interface QaRecord {
  questionId: string;
  category: string;
  question: string;
  gold: string;
  /** Memories in the answer prompt. */
  memories: number;
  /** Share of the evidence turns among those memories; null when the question has none (LongMemEval session-only). */
  evidenceInPrompt: number | null;
  answer?: string;
  judgement?: string;
  verdict?: 'CORRECT' | 'WRONG' | 'UNPARSED';
  answerUsage?: TokenUsage;
  judgeUsage?: TokenUsage;
  /** Both replies came from the cache. */
  cached?: boolean;
  /** The call that failed after its retries: the question is not judged. */
  error?: string;
}

/** The run's own facts, named as the recall run's results.json names them. */
export interface QaMeta extends Pick<EvalResults, 'benchmark' | 'command' | 'commit' | 'startedAt' | 'durationSeconds' | 'data' | 'limit' | 'mode'> {
  llmUrl: string;
  model: string;
  judgeModel: string;
  topK: number;
  wordBudget: number;
  llmConcurrency: number;
  withoutGold: number;
  calls: { made: number; cached: number };
}

interface QaFigures {
  questions: number;
  judged: number;
  /** Percent CORRECT of the judged questions; null when none was judged. */
  j: number | null;
  /** Percent of evidence turns in the answer prompts (the retrieval recall the answers stand on). */
  evidence_in_prompt: number | null;
}

/** What qa.json holds; qa.md is drawn from it alone. */
export interface QaResults extends QaFigures {
  benchmark: BenchmarkName;
  command: string;
  commit: string;
  started_at: string;
  duration_seconds: number;
  data: string;
  limit: number | null;
  mode: 'in-process' | 'http';
  llm_url: string;
  model: string;
  judge_model: string;
  top_k: number;
  word_budget: number;
  llm_concurrency: number;
  /** Which categories `j` averages over. */
  headline: string[];
  /** Every judged question, all categories. */
  j_all: number | null;
  by_category: Record<string, QaFigures & { label: string; headline: boolean }>;
  failed: number;
  unparsed: number;
  without_gold: number;
  tokens: {
    /** Questions whose answer and judgement both came with `usage`. */
    questions_with_usage: number;
    per_question: number | null;
    answer_prompt: number | null;
    answer_completion: number | null;
    judge_prompt: number | null;
    judge_completion: number | null;
    total: number;
  };
  calls: { made: number; cached: number };
  first_errors: string[];
  prompts: { answer_system: string; answer_user: string; judge_system: string; judge_user: string };
}

export function summarizeQa(records: readonly QaRecord[], categories: readonly CategorySpec[], meta: QaMeta): QaResults {
  const headline = categories.filter((category) => category.headline).map((category) => category.id);
  const by_category: QaResults['by_category'] = {};
  for (const category of categories) {
    const inCategory = records.filter((record) => record.category === category.id);
    if (inCategory.length > 0) by_category[category.id] = { label: category.label, headline: category.headline, ...figures(inCategory) };
  }
  const withUsage = records.filter((record) => record.answerUsage && record.judgeUsage);
  const meanOf = (pick: (record: QaRecord) => number) => (withUsage.length === 0 ? null : mean(withUsage.map(pick)));
  return {
    benchmark: meta.benchmark,
    command: meta.command,
    commit: meta.commit,
    started_at: meta.startedAt,
    duration_seconds: meta.durationSeconds,
    data: meta.data,
    limit: meta.limit,
    mode: meta.mode,
    llm_url: meta.llmUrl,
    model: meta.model,
    judge_model: meta.judgeModel,
    top_k: meta.topK,
    word_budget: meta.wordBudget,
    llm_concurrency: meta.llmConcurrency,
    headline,
    ...figures(records.filter((record) => headline.includes(record.category))),
    j_all: figures(records).j,
    by_category,
    failed: records.filter((record) => record.error !== undefined).length,
    unparsed: records.filter((record) => record.verdict === 'UNPARSED').length,
    without_gold: meta.withoutGold,
    tokens: {
      questions_with_usage: withUsage.length,
      per_question: meanOf((record) => record.answerUsage!.totalTokens + record.judgeUsage!.totalTokens),
      answer_prompt: meanOf((record) => record.answerUsage!.promptTokens),
      answer_completion: meanOf((record) => record.answerUsage!.completionTokens),
      judge_prompt: meanOf((record) => record.judgeUsage!.promptTokens),
      judge_completion: meanOf((record) => record.judgeUsage!.completionTokens),
      total: records.reduce((sum, record) => sum + (record.answerUsage?.totalTokens ?? 0) + (record.judgeUsage?.totalTokens ?? 0), 0),
    },
    calls: meta.calls,
    first_errors: [...new Set(records.flatMap((record) => (record.error ? [record.error] : [])))].slice(0, 5),
    prompts: { answer_system: ANSWER_SYSTEM, answer_user: ANSWER_USER, judge_system: JUDGE_SYSTEM, judge_user: JUDGE_USER },
  };
}

function figures(records: readonly QaRecord[]): QaFigures {
  const judged = records.filter((record) => record.verdict !== undefined);
  const withEvidence = records.filter((record) => record.evidenceInPrompt !== null);
  return {
    questions: records.length,
    judged: judged.length,
    j: judged.length === 0 ? null : (100 * judged.filter((record) => record.verdict === 'CORRECT').length) / judged.length,
    evidence_in_prompt: withEvidence.length === 0 ? null : 100 * mean(withEvidence.map((record) => record.evidenceInPrompt!)),
  };
}

/** `<out>/qa.md`. */
export function renderQaReport(results: QaResults): string {
  const title = results.benchmark === 'locomo' ? 'LoCoMo' : 'LongMemEval';
  const lines: string[] = [`# QA score (LLM judge): ${title}`, ''];
  lines.push(`- Command: \`${results.command}\``);
  lines.push(`- Commit: \`${results.commit}\``);
  lines.push(`- Started ${results.started_at}, took ${results.duration_seconds.toFixed(0)} s; retrieval ${results.mode}`);
  lines.push(`- Answer model \`${results.model}\`, judge model \`${results.judge_model}\` at \`${results.llm_url}\` (temperature 0, ${results.llm_concurrency} questions at once)`);
  lines.push(`- Each question's answer prompt holds its top ${results.top_k} memories, at most ${results.word_budget} words of them (the first always)`);
  lines.push(`- Data: \`${results.data}\`${results.limit !== null ? ` (first ${results.limit} questions)` : ''}; ${results.questions + sumOthers(results)} questions with a gold answer, ${results.without_gold} without (left out)`);
  if (results.failed > 0) lines.push(`- **${results.failed} questions failed** after their retries and are not judged (a rerun asks them again): ${results.first_errors.join('; ')}`);
  if (results.unparsed > 0) lines.push(`- ${results.unparsed} judgements said neither CORRECT nor WRONG and count as wrong`);
  lines.push(`- LLM calls: ${results.calls.made} made, ${results.calls.cached} answered from qa-cache.jsonl`, '');

  lines.push(`## J: ${num(results.j)}`, '');
  lines.push(`Percent of judged questions the judge called CORRECT, over categories ${results.headline.join(', ')}; every category: ${num(results.j_all)}. "Evidence in prompt" is the share of evidence turns among the memories the answer model read: the retrieval recall the answers stand on.`, '');
  lines.push('| category | questions | judged | J | evidence in prompt |', '|---|---:|---:|---:|---:|');
  for (const [id, figure] of Object.entries(results.by_category)) {
    const name = id === figure.label ? id : `${id} ${figure.label}`;
    lines.push(`| ${name}${figure.headline ? '' : ' (apart)'} | ${figure.questions} | ${figure.judged} | ${num(figure.j)} | ${num(figure.evidence_in_prompt)} |`);
  }
  lines.push(`| **headline** | ${results.questions} | ${results.judged} | ${num(results.j)} | ${num(results.evidence_in_prompt)} |`, '');

  const t = results.tokens;
  lines.push('## Tokens per question', '');
  if (t.questions_with_usage === 0) lines.push('The endpoint reported no `usage`: tokens unknown.', '');
  else {
    lines.push(`From the endpoint's \`usage\`, over ${t.questions_with_usage} questions: ${num(t.per_question)} tokens per question in all; answer ${num(t.answer_prompt)} prompt + ${num(t.answer_completion)} completion, judge ${num(t.judge_prompt)} prompt + ${num(t.judge_completion)} completion; ${t.total} tokens this run reported (cached replies count again).`, '');
  }

  lines.push('## Prompts', '', 'Answer (system):', '', fence(results.prompts.answer_system), 'Answer (user):', '', fence(results.prompts.answer_user));
  lines.push('Judge (system):', '', fence(results.prompts.judge_system), 'Judge (user):', '', fence(results.prompts.judge_user));
  lines.push('Per question (memories, answer, judgement): `qa-questions.jsonl`. How to get this figure and read it: `eval/README.md`.', '');
  return lines.join('\n');
}

/** Questions outside the headline, for the data line's total. */
function sumOthers(results: QaResults): number {
  return Object.values(results.by_category).filter((figure) => !figure.headline).reduce((sum, figure) => sum + figure.questions, 0);
}

function num(value: number | null): string {
  return value === null ? '–' : value.toFixed(1);
}

function fence(text: string): string {
  return `\`\`\`text\n${text}\n\`\`\`\n`;
}
