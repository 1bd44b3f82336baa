import { CUTOFFS, WORD_BUDGETS, type AtK, type LevelMetrics, type MetricSet } from './metrics.js';
import type { EvalResults, SystemResult } from './results.js';

/** `<out>/report.md`: every table drawn from results.json, nothing measured here. */
export function renderReport(results: EvalResults): string {
  const lines: string[] = [];
  const title = results.benchmark === 'locomo' ? 'LoCoMo' : 'LongMemEval';
  const ok = results.systems.filter((system) => system.status === 'ok' && system.headline);
  const headlineCount = ok[0]?.headline?.questions ?? 0;

  lines.push(`# Evidence recall: ${title}`, '');
  lines.push(`- Command: \`${results.command}\``);
  lines.push(`- Commit: \`${results.commit}\``);
  lines.push(`- Started ${results.startedAt}, took ${formatDuration(results.durationSeconds)}`);
  const embedder = results.embedder ? `, embedder \`${results.embedder.modelId}\` (${results.embedder.kind}, ${results.embedder.dimensions} dimensions)` : '';
  lines.push(`- Mode: ${results.mode}${results.url ? ` (${results.url})` : ''}${embedder}`);
  const d = results.dataset;
  lines.push(
    `- Data: \`${results.data}\`${results.limit !== null ? ` (first ${results.limit} questions)` : ''}: ${d.users} users, ${d.sessions} sessions, ${d.turns} turns replayed as ${d.adds} Adds (at most 20 messages / 2,000 words each, ${results.concurrency.adds} at once); ${d.questions} questions searched with top_k ${results.topK}, ${results.concurrency.searches} at once`,
  );
  for (const skip of d.skipped) if (skip.count > 0) lines.push(`- Left out: ${skip.count} ${skip.reason}`);
  for (const note of d.notes) lines.push(`- Note: ${note}`);
  lines.push('');

  lines.push(`## Headline: ${d.headlineLabel}, ${headlineCount} questions`, '');
  lines.push('Share of evidence turns found in the first k results (a unit counts for every turn it holds); MRR and NDCG@10 over the same turns.', '');
  lines.push(...turnTable(results.systems, (system) => system.headline));

  if (results.benchmark === 'longmemeval') {
    lines.push('## Session level (LongMemEval\'s official granularity)', '');
    lines.push('Answer sessions among the first k *distinct* sessions of the ranking (LongMemEval\'s turn-to-session conversion). any = at least one answer session, all = every one.', '');
    lines.push(...anyAllTable(results.systems, (system) => system.headline?.session));
    lines.push('## Turn level, any / all', '');
    lines.push('The same with the has_answer turns: any = at least one, all = every one within the first k units.', '');
    lines.push(...anyAllTable(results.systems, (system) => system.headline?.turn));
  }

  if (results.benchmark === 'locomo') {
    lines.push('## Session level', '');
    lines.push('Evidence sessions among the first k *distinct* sessions of the ranking (each session at the rank of its best unit). any = at least one evidence session, all = every one.', '');
    lines.push(...anyAllTable(results.systems, (system) => system.headline?.session));
  }
  lines.push(...sessionShareTables(results.systems));

  if (results.systems.some((system) => system.headline?.words)) {
    lines.push('## Recall within a word budget', '');
    lines.push('Share of evidence turns whose first returned unit is read whole within the first N words of returned `content` (prefix included): what an answer model reading up to that many words sees.', '');
    lines.push(...wordBudgetTable(results.systems, (system) => system.headline));
  }

  const apart = d.categories.filter((category) => !category.headline);
  for (const category of apart) {
    const count = d.questionsByCategory[category.id] ?? 0;
    if (count === 0) continue;
    lines.push(`## Category ${category.id} (${category.label}), reported apart: ${count} questions`, '');
    if (results.benchmark === 'locomo' && category.id === '5') {
      lines.push('Adversarial questions pin an event on the wrong person or ask about something never said; their evidence is the turn that holds the real fact.', '');
    }
    lines.push(...turnTable(results.systems, (system) => system.byCategory?.[category.id]));
  }

  lines.push('## Per category', '');
  lines.push(...categoryMatrix(results));
  for (const category of d.categories.filter((c) => c.headline)) {
    const count = d.questionsByCategory[category.id] ?? 0;
    if (count === 0) continue;
    const name = category.id === category.label ? category.label : `${category.id} (${category.label})`;
    lines.push(`### ${name}: ${count} questions`, '');
    lines.push(...turnTable(results.systems, (system) => system.byCategory?.[category.id]));
  }

  lines.push('## Timings', '');
  const ingest = results.ingest;
  lines.push(
    `Ingest: ${d.adds} Adds in ${ingest.wallSeconds.toFixed(1)} s (${ingest.addsPerSecond.toFixed(1)} Adds/s${ingest.units !== undefined ? `, ${ingest.units} units, ${(ingest.units / ingest.wallSeconds).toFixed(0)} units/s` : ''}); Add latency p50 ${ms(ingest.latency.p50Ms)}, p95 ${ms(ingest.latency.p95Ms)}, max ${ms(ingest.latency.maxMs)} with ${results.concurrency.adds} in flight.`,
    '',
  );
  if (ingest.alreadyStored > 0) {
    lines.push(`**${ingest.alreadyStored} of ${d.adds} Adds were already stored** (a reused data directory): the ingest figures above do not measure ingest.`, '');
  }
  lines.push(`Search latency is measured per call with ${results.concurrency.searches} calls in flight, as the platform sends them; on ${results.mode === 'in-process' ? 'one Node thread' : 'the server'} a call also waits for the others, so searches/s (≈ 1 / service time) is the figure to compare systems by. Peers' times include encoding the query, as ours do.`, '');
  lines.push('| system | searches | wall s | searches/s | p50 ms | p95 ms | max ms | index build s |', '|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const system of results.systems) {
    const q = system.query;
    if (!q) continue;
    lines.push(`| ${system.name} | ${q.count} | ${q.wallSeconds.toFixed(1)} | ${q.perSecond.toFixed(1)} | ${ms(q.p50Ms)} | ${ms(q.p95Ms)} | ${ms(q.maxMs)} | ${system.build ? system.build.seconds.toFixed(1) : ''} |`);
  }
  lines.push('');

  lines.push('## Systems', '');
  lines.push('| system | what it is | configuration |', '|---|---|---|');
  for (const system of results.systems) {
    lines.push(`| ${system.name} | ${system.description} | ${escapeCell(system.configuration)} |`);
  }
  lines.push('');
  for (const system of results.systems) {
    if (system.noOpOverrides && system.noOpOverrides.length > 0) {
      lines.push(`- **${system.name}** measures nothing new: ${system.noOpOverrides.join(', ')} already ${system.noOpOverrides.length === 1 ? 'has' : 'have'} that value by default.`);
    }
    if (system.sameAsHybrid && !(system.noOpOverrides && system.noOpOverrides.length > 0)) {
      lines.push(`- **${system.name}** ranks every evidence item exactly where hybrid does: the term never moved anything on this data.`);
    }
    if (system.status === 'failed') lines.push(`- **${system.name} could not run here**: ${system.error}`);
    else if (system.error) lines.push(`- **${system.name}**: ${system.error}`);
    if (system.unmappedShare !== undefined && system.unmappedShare > 0) {
      lines.push(`- ${system.name}: ${(system.unmappedShare * 100).toFixed(2)}% of returned units mapped to no benchmark turn.`);
    }
    if (system.matching) {
      const m = system.matching;
      lines.push(`- ${system.name}: hits matched to turns by content: ${m.exact} exact, ${m.piece} as a part or span, ${m.fuzzy} by shared words, ${m.unmatched} unmatched, ${m.ambiguous} ambiguous (counted for every candidate). Distinct contents per user are matched once.`);
    }
  }
  lines.push('');
  lines.push('How to read this report, and what each metric means: `eval/README.md`. The chart is `recall.svg`; every figure is in `results.json`, and per-question ranks in `questions.jsonl`.', '');
  return lines.join('\n');
}

type Pick = (system: SystemResult) => MetricSet | undefined;

function wordBudgetTable(systems: readonly SystemResult[], pick: Pick): string[] {
  const rows = [`| system | ${WORD_BUDGETS.map((budget) => `${budget} words`).join(' | ')} | mean words per item |`, `|---|${WORD_BUDGETS.map(() => '---:').join('|')}|---:|`];
  for (const system of systems) {
    const words = pick(system)?.words;
    if (words) rows.push(`| ${system.name} | ${WORD_BUDGETS.map((budget) => pct(words.recall[budget])).join(' | ')} | ${words.meanWordsPerItem.toFixed(1)} |`);
  }
  rows.push('');
  return rows;
}

function turnTable(systems: readonly SystemResult[], pick: Pick): string[] {
  const header = `| system | ${CUTOFFS.map((k) => `R@${k}`).join(' | ')} | MRR | NDCG@10 |`;
  const rows = [header, `|---|${CUTOFFS.map(() => '---:').join('|')}|---:|---:|`];
  for (const system of systems) {
    const set = pick(system);
    if (system.status === 'failed') {
      rows.push(`| ${system.name} | ${CUTOFFS.map(() => '–').join(' | ')} | – | – |`);
      continue;
    }
    if (!set || set.turn.questions === 0) continue;
    rows.push(`| ${system.name} | ${CUTOFFS.map((k) => pct(set.turn.recall[k])).join(' | ')} | ${dec(set.turn.mrr)} | ${dec(set.turn.ndcg10)} |`);
  }
  return [...rows, ''];
}

/** Share of evidence sessions found, counted over k distinct sessions and over k results. */
function sessionShareTables(systems: readonly SystemResult[]): string[] {
  const rows = ['## Share of evidence sessions found', ''];
  rows.push('Per question, the share of its evidence sessions found, averaged: "k sessions" over the first k distinct sessions of the ranking, "k results" over the sessions the first k returned units come from; any@k = at least one evidence session among the first k results.', '');
  rows.push(`| system | ${CUTOFFS.map((k) => `S@${k} sessions`).join(' | ')} | ${CUTOFFS.map((k) => `S@${k} results`).join(' | ')} | ${CUTOFFS.map((k) => `any@${k} results`).join(' | ')} |`);
  rows.push(`|---|${[...CUTOFFS, ...CUTOFFS, ...CUTOFFS].map(() => '---:').join('|')}|`);
  for (const system of systems) {
    const set = system.headline;
    if (!set || set.session.questions === 0) continue;
    const cells = (values: AtK | undefined) => CUTOFFS.map((k) => (values ? pct(values[k]) : '')).join(' | ');
    rows.push(`| ${system.name} | ${cells(set.session.recall)} | ${cells(set.sessionInResults?.recall)} | ${cells(set.sessionInResults?.recallAny)} |`);
  }
  return [...rows, ''];
}

function anyAllTable(systems: readonly SystemResult[], pick: (system: SystemResult) => LevelMetrics | undefined): string[] {
  const anyKs = [1, 5, 10, 25] as const;
  const allKs = [5, 10, 25, 50] as const;
  const rows = [
    `| system | ${anyKs.map((k) => `any@${k}`).join(' | ')} | ${allKs.map((k) => `all@${k}`).join(' | ')} | NDCG@10 | questions |`,
    `|---|${[...anyKs, ...allKs].map(() => '---:').join('|')}|---:|---:|`,
  ];
  for (const system of systems) {
    const level = pick(system);
    if (!level || level.questions === 0) continue;
    const cells = (values: AtK, ks: readonly (keyof AtK)[]) => ks.map((k) => pct(values[k])).join(' | ');
    rows.push(`| ${system.name} | ${cells(level.recallAny, anyKs)} | ${cells(level.recallAll, allKs)} | ${dec(level.ndcg10)} | ${level.questions} |`);
  }
  return [...rows, ''];
}

/** R@10 per system and category, the one table to scan for where a term helps or hurts. */
function categoryMatrix(results: EvalResults): string[] {
  const categories = results.dataset.categories.filter((c) => (results.dataset.questionsByCategory[c.id] ?? 0) > 0);
  const label = (c: { id: string; label: string }) => (c.id === c.label ? c.label : `${c.id} ${c.label}`);
  const rows = [
    'R@10 by category (full tables below):',
    '',
    `| system | ${categories.map(label).join(' | ')} |`,
    `|---|${categories.map(() => '---:').join('|')}|`,
  ];
  for (const system of results.systems) {
    if (system.status !== 'ok') continue;
    rows.push(`| ${system.name} | ${categories.map((c) => (system.byCategory?.[c.id] ? pct(system.byCategory[c.id].turn.recall[10]) : '')).join(' | ')} |`);
  }
  return [...rows, ''];
}

function pct(value: number): string {
  return (value * 100).toFixed(1);
}

function dec(value: number): string {
  return value.toFixed(3);
}

function ms(value: number): string {
  return value < 10 ? value.toFixed(2) : value.toFixed(0);
}

function escapeCell(text: string): string {
  return text.replace(/\|/g, '\\|');
}

function formatDuration(totalSeconds: number): string {
  const minutes = Math.floor(totalSeconds / 60);
  const rest = Math.round(totalSeconds - minutes * 60);
  return minutes > 0 ? `${minutes} min ${rest} s` : `${rest} s`;
}
