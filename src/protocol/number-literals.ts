/**
 * How a body's numbers were written, carried on the parsed value itself. The platform's contract
 * rejects `top_k: 100.0` but accepts a timestamp of `1704067200000.0`, and `JSON.parse` cannot
 * tell `100.0` from `100`: a parser that can (src/http/json-body.ts) marks each object's keys
 * whose literal had a fraction or an exponent, and validation reads the mark from the object,
 * whoever parsed it. A value built in code carries no mark: its numbers are what they are.
 */

/** A symbol, not enumerable: the mark never shows in a spread, `Object.keys` or JSON. */
const NON_INTEGER_LITERALS = Symbol('memorypool.nonIntegerLiterals');

type Marked = { [NON_INTEGER_LITERALS]?: Set<string | number> };

/** Records whether `container[key]` was written with a fraction or exponent (`100.0`, `1e2`); a repeated key's last literal wins. */
export function markLiteral(container: object, key: string | number, nonInteger: boolean): void {
  const marked = container as Marked;
  if (nonInteger) {
    let keys = marked[NON_INTEGER_LITERALS];
    if (!keys) Object.defineProperty(container, NON_INTEGER_LITERALS, { value: (keys = new Set()) });
    keys.add(key);
  } else {
    marked[NON_INTEGER_LITERALS]?.delete(key);
  }
}

/** True when `container[key]` was written with a fraction or exponent (`100.0`, `1e2`). */
export function writtenAsNonInteger(container: unknown, key: string | number): boolean {
  return typeof container === 'object' && container !== null && ((container as Marked)[NON_INTEGER_LITERALS]?.has(key) ?? false);
}
