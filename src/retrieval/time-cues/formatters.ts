/** Dates as memory units carry them in their text (UTC). */

const MONTH_NAMES = [
  'January', 'February', 'March', 'April', 'May', 'June',
  'July', 'August', 'September', 'October', 'November', 'December',
] as const;

/** "8 May 2023" (UTC), the form lexical documents carry so a question naming the date can match it. */
export function formatReadableDate(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  const date = new Date(ms);
  return `${date.getUTCDate()} ${MONTH_NAMES[date.getUTCMonth()]} ${date.getUTCFullYear()}`;
}

/** "2023-05-08 13:56" (UTC). */
export function formatStamp(ms: number): string {
  if (!Number.isFinite(ms)) return '';
  const iso = new Date(ms).toISOString();
  return `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;
}
