import { z } from 'zod';
import { createError, type ValidationIssue } from '../errors.js';
import { loneSurrogateIssues, refuseLoneSurrogates } from '../protocol/unicode-text.js';

/**
 * Turns zod issues into the platform's FastAPI-style problem list: `loc` starts with "body",
 * `type` names the rule (as pydantic would: missing, string_type, int_type, ...).
 */
export function toValidationIssues(error: z.ZodError, root: string): ValidationIssue[] {
  return error.issues.map((issue) => {
    const loc = [root, ...issue.path.map((part) => (typeof part === 'symbol' ? String(part) : part))];
    return { loc, msg: issue.message, type: issueType(issue) };
  });
}

function issueType(issue: z.core.$ZodIssue): string {
  if (issue.code === 'custom') return (issue.params?.type as string | undefined) ?? 'value_error';
  if (issue.code === 'invalid_type') {
    if (issue.input === undefined) return 'missing';
    const names: Record<string, string> = { object: 'dict', array: 'list', number: 'int', string: 'string', boolean: 'bool' };
    return `${names[issue.expected] ?? issue.expected}_type`;
  }
  if (issue.code === 'too_small') return issue.origin === 'array' ? 'too_short' : issue.origin === 'string' ? 'string_too_short' : 'greater_than_equal';
  if (issue.code === 'too_big') return issue.origin === 'array' ? 'too_long' : issue.origin === 'string' ? 'string_too_long' : 'less_than_equal';
  return issue.code;
}

/** A required string with something other than white space in it. */
export function nonBlankString(): z.ZodString {
  return z
    .string({ error: (issue) => (issue.input === undefined ? 'Field required' : 'Input should be a valid string') })
    .min(1, { error: 'String should have at least 1 character' })
    .refine((value) => value.trim() !== '', { error: 'String should not be blank', params: { type: 'string_blank' } }) as unknown as z.ZodString;
}

/** Parses with the schema or throws VALIDATION_FAILED (422) listing every problem. */
export function parseOr422<T>(schema: z.ZodType<T>, input: unknown, extraIssues: ValidationIssue[] = []): T {
  if (input === undefined) {
    throw createError('VALIDATION_FAILED', undefined, { issues: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
  }
  // With the input on each issue, a present value of the wrong type is named by its type
  // (string_type, as pydantic says), not "missing".
  const result = schema.safeParse(input, { reportInput: true });
  const issues = [...(result.success ? [] : toValidationIssues(result.error, 'body')), ...extraIssues, ...loneSurrogateIssues(input, 'body')];
  if (issues.length > 0 || !result.success) throw createError('VALIDATION_FAILED', undefined, { issues });
  return result.data;
}

/** Parses with the schema or throws INVALID_PARAMETER (400) naming the first problem (the MemoryPool protocol's shape). */
export function parseOr400<T>(schema: z.ZodType<T>, input: unknown): T {
  // With the input on each issue, "is required" is said of a missing field only, not of one of the wrong type.
  const result = schema.safeParse(input, { reportInput: true });
  if (result.success) return (refuseLoneSurrogates(input), result.data);
  const issue = result.error.issues[0];
  // A rule that knows the place better than zod's path names it (a `where` expression: `where.$or[1].importance`).
  const place = issue.code === 'custom' ? (issue.params?.place as string | undefined) : undefined;
  const field = place ?? (issue.path.length > 0 ? issue.path.join('.') : 'body');
  const message = issue.code === 'invalid_type' && issue.input === undefined ? 'is required' : issue.message;
  throw createError('INVALID_PARAMETER', `${field}: ${message}`);
}
