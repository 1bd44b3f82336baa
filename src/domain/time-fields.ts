/**
 * A memory's times as Unix ms, parsed once per record and field: a filtered search tests every
 * memory of its user, and parsing an ISO date each time was most of what a `where` on
 * `created_at` cost (20,000 memories: 7% of the bench in `Date.parse` alone). Keyed by the record
 * object (records are replaced, never changed) and checked against the text it was parsed from,
 * so a changed field is parsed again rather than answered stale.
 */
export type TimeField = 'created_at' | 'updated_at' | 'occurred_at' | 'expires_at';

interface Parsed {
  text: string;
  ms: number | undefined;
}

const parsedTimes = new WeakMap<object, Partial<Record<TimeField, Parsed>>>();

/** The field's time in Unix ms; undefined when the memory has none or it does not parse. */
export function timeMsOf(record: Partial<Record<TimeField, string>>, field: TimeField): number | undefined {
  const text = record[field];
  if (text === undefined) return undefined;
  let memo = parsedTimes.get(record);
  if (memo === undefined) parsedTimes.set(record, (memo = {}));
  const known = memo[field];
  if (known !== undefined && known.text === text) return known.ms;
  const ms = Date.parse(text);
  const parsed = { text, ms: Number.isFinite(ms) ? ms : undefined };
  memo[field] = parsed;
  return parsed.ms;
}
