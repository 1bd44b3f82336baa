/** A point in time as the protocol reads it: Unix milliseconds (a number, or digits in a query string) or ISO 8601 text; null when neither. */
export function parseInstant(value: number | string): number | null {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (/^\s*-?\d+\s*$/.test(value)) return Number(value);
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(value.trim())) return null;
  const ms = Date.parse(value.trim());
  return Number.isFinite(ms) ? ms : null;
}
