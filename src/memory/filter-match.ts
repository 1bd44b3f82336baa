import type { MemoryFields, MemoryFilter, MetadataValue } from '../domain/memory.js';
import { timeMsOf } from '../domain/time-fields.js';
import { matchesWhere } from './where-match.js';

export type FilterTest = (record: MemoryFields, timeMs: number | undefined) => boolean;

/**
 * Whether a record passes every condition of the filter (see `MemoryFilter`). `timeMs`, the
 * record's time when the caller has it parsed already (a corpus unit's): a search tests every unit.
 */
export function matchesFilter(record: MemoryFields, filter: MemoryFilter, timeMs?: number): boolean {
  return filterTest(filter)(record, timeMs);
}

/**
 * A filter as the list of its conditions' tests, built once per filter object: a filtered search
 * tests every memory of its user, and re-reading which conditions the filter has (and listing its
 * metadata's entries) for each memory cost more than the tests.
 */
const compiled = new WeakMap<MemoryFilter, FilterTest>();

/** The filter's test, to apply to many records (`matchesFilter` looks it up per record). */
export function filterTest(filter: MemoryFilter): FilterTest {
  let test = compiled.get(filter);
  if (test === undefined) compiled.set(filter, (test = compile(filter)));
  return test;
}

/** `entity` is no condition on the record alone: it reads the user's entity index (`entityCondition`, entity-reads.ts). */
function compile(filter: MemoryFilter): FilterTest {
  const tests: FilterTest[] = [];
  const { tag, agentId, runId, sinceMs, untilMs, metadata, where } = filter;
  if (tag !== undefined) tests.push((record) => record.tags.includes(tag));
  if (agentId !== undefined) tests.push((record) => record.agent_id === agentId);
  if (runId !== undefined) tests.push((record) => record.run_id === runId);
  if (sinceMs !== undefined || untilMs !== undefined) {
    const inside = inWindow(sinceMs, untilMs);
    // A time that does not parse passes no window.
    tests.push((record, timeMs) => inside(timeMs ?? timeMsOf(record, record.occurred_at !== undefined ? 'occurred_at' : 'created_at') ?? Number.NaN));
  }
  for (const [key, wanted] of Object.entries(metadata ?? {})) {
    tests.push((record) => {
      const stored = record.metadata?.[key];
      return stored !== undefined && sameValue(stored, wanted);
    });
  }
  if (where) tests.push((record) => matchesWhere(record, where));
  if (tests.length === 1) return tests[0];
  return (record, timeMs) => {
    for (const test of tests) if (!test(record, timeMs)) return false;
    return true;
  };
}

/**
 * A filter that is a time window (`since`, `until`) and nothing else, as a test of the memory's
 * time alone: a search can apply it to its units' parsed times without looking up their records.
 * Null for any other filter.
 */
export function timeWindowOnly(filter: MemoryFilter): ((timeMs: number) => boolean) | null {
  const { sinceMs, untilMs, ...rest } = filter;
  if ((sinceMs === undefined && untilMs === undefined) || Object.values(rest).some((condition) => condition !== undefined)) return null;
  return inWindow(sinceMs, untilMs);
}

function inWindow(sinceMs: number | undefined, untilMs: number | undefined): (timeMs: number) => boolean {
  return (timeMs) => (sinceMs === undefined || timeMs >= sinceMs) && (untilMs === undefined || timeMs <= untilMs);
}

/**
 * A filter's value read as the type the memory stored it with: a query string carries only
 * text, so `meta.priority=2` matches a stored 2 and `meta.done=true` a stored true, while a
 * stored "2" is matched by the text "2" only.
 */
function sameValue(stored: MetadataValue, wanted: MetadataValue): boolean {
  if (typeof stored === typeof wanted) return stored === wanted;
  if (typeof wanted !== 'string') return String(wanted) === stored;
  if (typeof stored === 'number') return wanted.trim() !== '' && Number(wanted) === stored;
  return wanted === String(stored);
}
