import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Progress } from '../../src/cli/progress.js';
import type { BenchQuestion } from '../benchmark.js';
import { SEARCH_CONCURRENCY, benchmarkOf, gitCommit, ingestAll, withService, type EvalOptions, type ProgressFactory } from '../evaluate.js';
import { evidenceRanks } from '../metrics.js';
import { mapConcurrent } from '../pool.js';
import { planAdds } from '../replay-plan.js';
import { HttpTarget, ServiceTarget, type ReplayTarget, type SearchAnswer } from '../replay-targets.js';
import { ChatClient, type ChatMessage, type ChatReply } from './chat-client.js';
import { answerMessages, judgeMessages, memoriesWithin, parseVerdict } from './prompts.js';
import { ReplyCache } from './qa-cache.js';
import { renderQaReport, summarizeQa, type QaRecord, type QaResults } from './qa-report.js';

/**
 * `npm run eval -- qa <benchmark> ...`: the QA score. The benchmark is replayed and searched as
 * the recall run does; each question's top memories go to an answer model, and a judge model grades
 * the answer against the gold one. Writes qa.json, qa.md and qa-questions.jsonl into `out`, and
 * keeps every reply in qa-cache.jsonl there.
 */
export interface QaOptions
  extends Pick<EvalOptions, 'benchmark' | 'data' | 'limit' | 'url' | 'token' | 'makeEmbedder' | 'embedderKind' | 'command' | 'keepData' | 'dataDir' | 'databaseUrl' | 'noTimestamps' | 'oneUser' | 'exhaustiveLimit' | 'log' | 'quiet'> {
  out: string;
  llmUrl: string;
  model: string;
  /** Default: the answer model. */
  judgeModel?: string;
  apiKey?: string;
  /** Memories put in the answer prompt, at most. */
  topK: number;
  /** Words of memory content in the answer prompt, at most (the first memory always goes in). */
  wordBudget: number;
  /** Questions in flight at the LLM endpoint. */
  llmConcurrency: number;
  llmTimeoutMs?: number;
  llmRetries?: number;
  /** First backoff after a 5xx or timeout (tests make it short). */
  llmBackoffMs?: number;
}

export const QA_FILES = { results: 'qa.json', report: 'qa.md', questions: 'qa-questions.jsonl', cache: 'qa-cache.jsonl' } as const;

export async function runQa(options: QaOptions): Promise<QaResults> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const progress: ProgressFactory = (label, total, unit) => new Progress(label, total, unit, options.quiet ? null : process.stderr);
  const started = Date.now();
  const benchmark = await benchmarkOf(options);
  const asked = benchmark.questions.filter((question) => question.answer !== undefined);
  const adds = benchmark.users.flatMap((user) => planAdds(user, undefined, !options.noTimestamps));
  log(`${benchmark.name}: ${asked.length} questions with a gold answer (${benchmark.questions.length - asked.length} without, left out)`);

  const retrieve = async (target: ReplayTarget): Promise<SearchAnswer[]> => {
    await ingestAll(target, adds, progress);
    const bar = progress('search', asked.length, 'q');
    const answers = await mapConcurrent(asked, SEARCH_CONCURRENCY, async (question) => {
      const answer = await target.search(question, options.topK);
      bar.tick();
      return answer;
    });
    bar.finish();
    return answers;
  };
  const retrieved =
    options.url !== undefined
      ? await retrieve(new HttpTarget(options.url, options.token, benchmark.users))
      : await withService(options, log, (service) => retrieve(new ServiceTarget(service, adds)));

  await mkdir(options.out, { recursive: true });
  const cache = await ReplyCache.open(join(options.out, QA_FILES.cache));
  const client = new ChatClient({ baseUrl: options.llmUrl, apiKey: options.apiKey, timeoutMs: options.llmTimeoutMs, retries: options.llmRetries, backoffMs: options.llmBackoffMs });
  const calls = { made: 0, cached: 0 };
  const ask = async (model: string, messages: ChatMessage[]): Promise<ChatReply & { cached: boolean }> => {
    const key = ReplyCache.key(model, messages);
    const kept = cache.get(key);
    if (kept) {
      calls.cached++;
      return { ...kept, cached: true };
    }
    const reply = await client.complete(model, messages);
    calls.made++;
    await cache.put(key, reply);
    return { ...reply, cached: false };
  };

  const judgeModel = options.judgeModel ?? options.model;
  const bar = progress('answer and judge', asked.length, 'q');
  const records = await mapConcurrent(asked, options.llmConcurrency, async (question, index) => {
    const record = await askOne(question, retrieved[index], options, judgeModel, ask);
    bar.tick();
    return record;
  });
  bar.finish();

  const results = summarizeQa(records, benchmark.categories, {
    benchmark: benchmark.name,
    command: options.command,
    commit: gitCommit(),
    startedAt: new Date(started).toISOString(),
    durationSeconds: (Date.now() - started) / 1000,
    data: options.data,
    limit: options.limit ?? null,
    mode: options.url !== undefined ? 'http' : 'in-process',
    llmUrl: options.llmUrl,
    model: options.model,
    judgeModel,
    topK: options.topK,
    wordBudget: options.wordBudget,
    llmConcurrency: options.llmConcurrency,
    withoutGold: benchmark.questions.length - asked.length,
    calls,
  });
  await writeFile(join(options.out, QA_FILES.results), `${JSON.stringify(results, null, 2)}\n`);
  await writeFile(join(options.out, QA_FILES.report), renderQaReport(results));
  await writeFile(join(options.out, QA_FILES.questions), records.map((record) => JSON.stringify(record)).join('\n') + (records.length > 0 ? '\n' : ''));
  return results;
}

type Ask = (model: string, messages: ChatMessage[]) => Promise<ChatReply & { cached: boolean }>;

/** One question through answer and judge; a call that fails after its retries is recorded, not fatal (a rerun asks again). */
async function askOne(question: BenchQuestion, found: SearchAnswer, options: QaOptions, judgeModel: string, ask: Ask): Promise<QaRecord> {
  const contents = found.contents ?? [];
  const memories = memoriesWithin(contents, found.words ?? contents.map(() => 0), options.topK, options.wordBudget);
  const ranks = evidenceRanks(found.ranking.slice(0, memories.length), question.evidenceTurns);
  const record: QaRecord = {
    questionId: question.questionId,
    category: question.category,
    question: question.query,
    gold: question.answer ?? '',
    memories: memories.length,
    evidenceInPrompt: ranks.length === 0 ? null : ranks.filter((rank) => rank !== null).length / ranks.length,
  };
  try {
    const answer = await ask(options.model, answerMessages(question.query, memories, question.askedAt));
    record.answer = answer.text.trim();
    record.answerUsage = answer.usage;
    const judgement = await ask(judgeModel, judgeMessages(question.query, record.gold, record.answer));
    record.judgeUsage = judgement.usage;
    record.judgement = judgement.text.trim();
    record.verdict = parseVerdict(judgement.text) ?? 'UNPARSED';
    record.cached = answer.cached && judgement.cached;
  } catch (error) {
    record.error = error instanceof Error ? error.message : String(error);
  }
  return record;
}
