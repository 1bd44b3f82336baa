import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.js';
import { nonBlankString, parseOr400, parseOr422, toValidationIssues } from '../../src/protocol/validation.js';

/** The AppError a call throws (the test fails when it throws none, or something else). */
function thrown(call: () => unknown): AppError {
  try {
    call();
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    return error as AppError;
  }
  throw new Error('expected the call to throw');
}

const search = z.object({
  query: nonBlankString(),
  user_id: nonBlankString(),
  top_k: z.number().int().min(1).max(100),
  options: z.array(z.string()).max(2).optional(),
  flags: z.object({ on: z.boolean() }).optional(),
});

describe('toValidationIssues', () => {
  const issues = (input: unknown) => {
    // With each issue's input, as a parse that reports it gives them: "missing" is then said of an absent value only.
    const result = search.safeParse(input, { reportInput: true });
    if (result.success) throw new Error('expected a failure');
    return toValidationIssues(result.error, 'body');
  };

  it('names each problem as pydantic would, its loc under the given root, array indices as numbers', () => {
    expect(issues({ query: 5, top_k: 1.5, options: ['a', 7], flags: [] })).toEqual([
      { loc: ['body', 'query'], msg: expect.any(String), type: 'string_type' },
      { loc: ['body', 'user_id'], msg: 'Field required', type: 'missing' },
      { loc: ['body', 'top_k'], msg: expect.any(String), type: 'int_type' },
      { loc: ['body', 'options', 1], msg: expect.any(String), type: 'string_type' },
      { loc: ['body', 'flags'], msg: expect.any(String), type: 'dict_type' },
    ]);
  });

  it('tells a number below or above its bounds, a too long array and a blank string apart', () => {
    expect(issues({ query: ' ', user_id: '', top_k: 0, options: ['a', 'b', 'c'] }).map(({ loc, type }) => [loc.slice(1).join('.'), type])).toEqual([
      ['query', 'string_blank'],
      // The empty string breaks both rules, and both are listed.
      ['user_id', 'string_too_short'],
      ['user_id', 'string_blank'],
      ['top_k', 'greater_than_equal'],
      ['options', 'too_long'],
    ]);
    expect(issues({ query: 'q', user_id: 'u', top_k: 101 })).toEqual([{ loc: ['body', 'top_k'], msg: expect.any(String), type: 'less_than_equal' }]);
  });

  it('reads the root it is given (a query string is not a body)', () => {
    const result = z.object({ q: z.string() }).safeParse({});
    expect(result.success).toBe(false);
    if (!result.success) expect(toValidationIssues(result.error, 'query')).toEqual([{ loc: ['query', 'q'], msg: expect.any(String), type: 'missing' }]);
  });
});

describe('nonBlankString', () => {
  it('takes any string with a character other than white space, as given', () => {
    expect(nonBlankString().parse('  Caroline ')).toBe('  Caroline ');
  });

  it('says "Field required" of a missing value and "Input should be a valid string" of another type', () => {
    const schema = z.object({ id: nonBlankString() });
    const messages = (input: unknown) => (schema.safeParse(input).error?.issues ?? []).map((issue) => issue.message);
    expect(messages({})).toEqual(['Field required']);
    expect(messages({ id: 3 })).toEqual(['Input should be a valid string']);
    expect(messages({ id: '' })).toEqual(['String should have at least 1 character', 'String should not be blank']);
    expect(messages({ id: '\t \n' })).toEqual(['String should not be blank']);
  });
});

describe('parseOr422', () => {
  it('returns the parsed value when the input is valid', () => {
    expect(parseOr422(search, { query: 'dog', user_id: 'u', top_k: 3, extra: true })).toEqual({ query: 'dog', user_id: 'u', top_k: 3 });
  });

  it('answers a missing body as one missing issue at ["body"]', () => {
    const error = thrown(() => parseOr422(search, undefined));
    expect({ code: error.code, status: error.status, issues: error.issues }).toEqual({ code: 'VALIDATION_FAILED', status: 422, issues: [{ loc: ['body'], msg: 'Field required', type: 'missing' }] });
  });

  it('lists every problem, the schema\'s first and then the extra ones the caller found', () => {
    const extra = { loc: ['body', 'top_k'], msg: 'Input should be a valid integer', type: 'int_from_float' };
    const error = thrown(() => parseOr422(search, { query: 'dog' }, [extra]));
    expect(error.code).toBe('VALIDATION_FAILED');
    expect(error.issues).toEqual([
      { loc: ['body', 'user_id'], msg: 'Field required', type: 'missing' },
      { loc: ['body', 'top_k'], msg: expect.any(String), type: 'missing' },
      extra,
    ]);
  });

  it('names a present value of the wrong type by its type, not "missing"', () => {
    const error = thrown(() => parseOr422(search, { query: 5, user_id: 'u', top_k: 3 }));
    expect(error.issues).toEqual([{ loc: ['body', 'query'], msg: 'Input should be a valid string', type: 'string_type' }]);
  });

  it('refuses a valid body when the caller found a problem the schema cannot see', () => {
    const extra = { loc: ['body', 'top_k'], msg: 'Input should be a valid integer', type: 'int_from_float' };
    expect(thrown(() => parseOr422(search, { query: 'dog', user_id: 'u', top_k: 3 }, [extra])).issues).toEqual([extra]);
  });
});

describe('parseOr400', () => {
  const add = z.object({ text: z.string(), importance: z.number().min(0).max(1).optional(), meta: z.object({ key: z.string() }).optional() });

  it('returns the parsed value when the input is valid', () => {
    expect(parseOr400(add, { text: 'x', importance: 0.5 })).toEqual({ text: 'x', importance: 0.5 });
  });

  it('names the first problem\'s field, dotted, with "is required" only for a missing one', () => {
    const missing = thrown(() => parseOr400(add, {}));
    expect([missing.code, missing.status, missing.message]).toEqual(['INVALID_PARAMETER', 400, 'text: is required']);
    expect(thrown(() => parseOr400(add, { text: 5 })).message).toMatch(/^text: (?!is required)./);
    expect(thrown(() => parseOr400(add, { text: 'x', meta: { key: 1 } })).message).toMatch(/^meta\.key: (?!is required)./);
    expect(thrown(() => parseOr400(add, { text: 'x', importance: 2 })).message).toMatch(/^importance: /);
  });

  it('names the body itself when the input is not an object at all', () => {
    expect(thrown(() => parseOr400(add, 'text')).message).toMatch(/^body: (?!is required)./);
    expect(thrown(() => parseOr400(add, undefined)).message).toBe('body: is required');
  });
});
