import { constants, PerformanceObserver } from 'node:perf_hooks';
import v8 from 'node:v8';

/**
 * Room for the server's old generation to grow between full collections, set from the live heap.
 *
 * V8 starts marking the old generation as soon as the room left below its limit is no more than
 * the young generation's capacity (a scavenge could promote that much), and sets the limit after
 * each full collection to the live size times a factor it derives from how fast it marked. A
 * server's live heap is small beside its young generation (a semi-space of 16 MiB on Node 20, 32
 * MiB on Node 24, against 40-60 MB live with two LoCoMo users cached), so a factor V8 readily
 * chooses (1.2 on Node 20 and 1.95 on Node 24 in the outliers measured) leaves no more room than
 * the young generation holds: marking then starts again right after every
 * collection, and a cached Search costs up to twice the CPU, for the life of the process, on V8's
 * marking threads. Which processes fall into it depends on the speeds V8 measured early: in
 * bench runs, about one server in ten on Node 20 and one in three on Node 24 (bench/HISTORY.md,
 * "Servers that collect all the time").
 *
 * V8's `--heap-growing-percent` replaces that factor and is read at each collection, so it can be
 * set from here: enough for `HEADROOM_SEMI_SPACES` semi-spaces above the live heap (the young
 * generation's worst case, with a margin), at least `MIN_PERCENT` so that a large heap still grows
 * by a fair step, and at most `MAX_PERCENT` so that a small one does not reserve without bound. It
 * is recomputed after every full collection, as the live heap changes. A process given the flag
 * by its operator (`node --heap-growing-percent=…`, or NODE_OPTIONS) keeps theirs.
 *
 * The server's entry (`serve`) calls it; a library that opens a pool in someone else's process
 * (`openMemoryPool`) leaves their heap alone.
 */

export const HEADROOM_SEMI_SPACES = 3;
export const MIN_PERCENT = 30;
export const MAX_PERCENT = 200;

/** The growing percent that leaves `HEADROOM_SEMI_SPACES` semi-spaces of room above `liveBytes`; `newSpaceBytes` is both semi-spaces, as V8 reports `new_space`. */
export function growingPercent(liveBytes: number, newSpaceBytes: number): number {
  const wanted = (HEADROOM_SEMI_SPACES * newSpaceBytes) / 2;
  const percent = Math.ceil((100 * wanted) / Math.max(liveBytes, 1));
  return Math.min(MAX_PERCENT, Math.max(MIN_PERCENT, percent));
}

/** Whether the operator set the factor themselves (a node flag, or NODE_OPTIONS; V8 reads `_` and `-` alike). */
export function operatorSetsGrowing(execArgv: readonly string[], nodeOptions: string | undefined): boolean {
  return [...execArgv, ...(nodeOptions ?? '').split(/\s+/)].some((flag) => /^--heap[-_]growing[-_]percent\b/.test(flag));
}

export interface HeapHeadroom {
  /** The percent set last (null while the operator's own applies). */
  readonly percent: number | null;
  stop(): void;
}

function newSpaceBytes(): number {
  return v8.getHeapSpaceStatistics().find((space) => space.space_name === 'new_space')?.space_size ?? 0;
}

/** Sets the growing percent now and after every full collection, until `stop`. */
export function keepHeapHeadroom(): HeapHeadroom {
  if (operatorSetsGrowing(process.execArgv, process.env.NODE_OPTIONS)) return { percent: null, stop() {} };
  let percent: number | null = null;
  const apply = (): void => {
    const next = growingPercent(v8.getHeapStatistics().used_heap_size, newSpaceBytes());
    if (next === percent) return;
    v8.setFlagsFromString(`--heap-growing-percent=${next}`);
    percent = next;
  };
  apply();
  const observer = new PerformanceObserver((list) => {
    if (list.getEntries().some((entry) => (entry as { detail?: { kind?: number } }).detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR)) apply();
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    get percent() {
      return percent;
    },
    stop: () => observer.disconnect(),
  };
}
