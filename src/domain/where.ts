/**
 * A `where` filter expression once validated (src/protocol/where-expression.ts reads the
 * MongoDB/Chroma-style JSON into this): every time already in Unix milliseconds, every field
 * known, every operator allowed for its field. The memory layer evaluates it per record
 * (src/memory/where-match.ts); a search ranks among the memories it passes.
 */

/** The fields a `where` may test; `metadata.<key>` for each of the memory's own fields. */
export const WHERE_FIELDS = ['agent_id', 'run_id', 'source', 'tags', 'importance', 'created_at', 'updated_at', 'occurred_at', 'expires_at'] as const;
export type WhereNamedField = (typeof WHERE_FIELDS)[number];
export type WhereField = WhereNamedField | `metadata.${string}`;

export const WHERE_OPERATORS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', 'nin', 'exists', 'contains'] as const;
export type WhereOperator = (typeof WHERE_OPERATORS)[number];

export type WhereScalar = string | number | boolean;

export type WhereNode =
  | { all: WhereNode[] }
  | { any: WhereNode[] }
  | { not: WhereNode }
  | { field: WhereField; op: WhereOperator; value: WhereScalar | WhereScalar[] };
