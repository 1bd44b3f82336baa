import * as vega from 'vega';
import { compile, type TopLevelSpec } from 'vega-lite';
import { CUTOFFS } from './metrics.js';
import type { EvalResults } from './results.js';

const SESSION_PANEL = 'session recall_any@k (k distinct sessions)';
const ON_TOP = "datum.system === 'hybrid' || datum.kind === 'server'";

interface Point {
  system: string;
  kind: string;
  panel: string;
  k: number;
  recall: number;
}

/**
 * Recall@k curves, one line per system: the headline turn recall, and for LongMemEval the
 * session-level recall_any beside it. Peers are dashed so our ablations and the others separate
 * at a glance.
 */
export function recallChartSpec(results: EvalResults): TopLevelSpec {
  const points: Point[] = [];
  const turnPanel = results.benchmark === 'locomo' ? `evidence-turn recall@k, ${shortHeadline(results)}` : 'turn recall@k (has_answer turns)';
  for (const system of results.systems) {
    if (system.status !== 'ok' || !system.headline) continue;
    for (const k of CUTOFFS) {
      points.push({ system: system.name, kind: system.kind, panel: turnPanel, k, recall: system.headline.turn.recall[k] });
      if (results.benchmark === 'longmemeval') {
        points.push({ system: system.name, kind: system.kind, panel: SESSION_PANEL, k, recall: system.headline.session.recallAny[k] });
      }
    }
  }
  const shown = results.systems.filter((system) => system.status === 'ok' && system.headline);
  const order = shown.map((system) => system.name);
  const headlineQuestions = shown[0]?.headline?.questions ?? 0;
  const commit = /^[0-9a-f]{40}/.test(results.commit) ? `commit ${results.commit.slice(0, 10)}` : 'no commit';
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: { text: `${results.benchmark === 'locomo' ? 'LoCoMo' : 'LongMemEval'}: recall@k per system`, subtitle: `${headlineQuestions} headline questions · ${commit} · dashed: peers on the same units and vectors` },
    data: { values: points },
    facet: { column: { field: 'panel', type: 'nominal', title: null, sort: [turnPanel, SESSION_PANEL] } },
    spec: {
      width: 380,
      height: 300,
      encoding: {
        x: { field: 'k', type: 'quantitative', title: 'k (results)', scale: { type: 'log', domain: [1, 100] }, axis: { values: [...CUTOFFS] } },
        y: { field: 'recall', type: 'quantitative', title: 'recall', scale: { domain: [0, 1] }, axis: { format: '.0%' } },
        color: { field: 'system', type: 'nominal', sort: order, scale: { domain: order, range: palette(shown) }, title: 'system' },
        // The subtitle says what dashed means; a legend of bare strokes renders poorly.
        strokeDash: { field: 'kind', type: 'nominal', sort: ['service', 'server', 'peer'], legend: null },
        strokeWidth: { condition: { test: ON_TOP, value: 3 }, value: 1.5 },
        tooltip: [
          { field: 'system', type: 'nominal' },
          { field: 'k', type: 'quantitative' },
          { field: 'recall', type: 'quantitative', format: '.1%' },
        ],
      },
      // Ours is drawn again on top, so the ablations that track it closely do not hide it.
      layer: [{ mark: { type: 'line', point: true } }, { transform: [{ filter: ON_TOP }], mark: { type: 'line', point: true } }],
    },
    resolve: { scale: { y: 'shared' } },
  };
}

/** Ours in black, the two halves and the ablations in distinct hues, the peers in warm colours. */
function palette(systems: ReadonlyArray<{ name: string; kind: string }>): string[] {
  const fixed: Record<string, string> = { hybrid: '#111111', server: '#111111', bm25: '#1f77b4', dense: '#9467bd', orama: '#d62728', lancedb: '#ff7f0e' };
  const others = ['#2ca02c', '#17becf', '#bcbd22', '#8c564b', '#e377c2', '#7f7f7f', '#aec7e8', '#98df8a'];
  let next = 0;
  return systems.map((system) => fixed[system.name] ?? others[next++ % others.length]);
}

function shortHeadline(results: EvalResults): string {
  return results.dataset.categories.filter((c) => c.headline).length === results.dataset.categories.length ? 'all categories' : 'categories 1-4';
}

/** Renders a Vega-Lite spec to SVG headlessly (no canvas, no browser). */
export async function renderSvg(spec: TopLevelSpec): Promise<string> {
  const view = new vega.View(vega.parse(compile(spec).spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
