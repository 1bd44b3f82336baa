import { z } from 'zod';

/**
 * A request schema's JSON Schema (draft 2020-12), from the zod schema that validates it: the
 * input side (what a client sends, before transforms such as limit's clamp). `omit` drops
 * alternative spellings a reader need not see; `required` names the fields whose absence the
 * schema reports in a custom check rather than by type.
 */
export function inputJsonSchema(schema: z.ZodType, shape: { omit?: readonly string[]; required?: readonly string[] } = {}): Record<string, unknown> {
  const json = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  delete json.$schema;
  const properties = json.properties as Record<string, unknown> | undefined;
  if (properties) for (const name of shape.omit ?? []) delete properties[name];
  if (shape.required) json.required = [...new Set([...((json.required as string[] | undefined) ?? []), ...shape.required])];
  return json;
}
