/**
 * "When" questions. In prototypes, 80% of the evidence of "when" questions held a time expression
 * against 12% of all turns, so such questions favour those turns (a soft boost the caller applies:
 * cheap and mostly right, not exhaustive).
 */

const WHEN_QUESTION_PATTERNS: readonly RegExp[] = [
  /^\W*when\b/i,
  /\b(?:since|until|till|by)\s+when\b/i,
  /\b(?:what|which)\s+(?:year|month|date|day|week|weekend|decade|season|century)s?\b/i,
  /\bwhat\s+time\s+(?:did|does|do|is|was|were|will|would|are|has|had|of)\b/i,
  /\b(?:on|at)\s+what\s+(?:date|day|time|point)\b/i,
  /\bhow\s+long\b/i,
  /\bhow\s+(?:many|much)\s+(?:\w+\s+)?(?:years|months|weeks|days|hours|minutes|time)\b/i,
  /\bhow\s+(?:soon|recently)\b/i,
  /\bthe\s+date\s+(?:of|when|on)\b/i,
];

/** "When did…", "What year…", "How long ago…", "How many days passed…" and the like. */
export function isWhenQuestion(query: string): boolean {
  return WHEN_QUESTION_PATTERNS.some((pattern) => pattern.test(query));
}
