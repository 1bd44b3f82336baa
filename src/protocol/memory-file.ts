import { z } from 'zod';
import { memoryVersionSchema } from '../domain/memory.js';
import type { PortableRecord } from '../memory/portability.js';
import { addParamsSchema, DEFAULT_USER, idParamsSchema } from './memorypool-schemas.js';
import { loneSurrogateReason } from './unicode-text.js';

/**
 * A memories file, one JSON object per line, in either of two shapes: the MemoryPool protocol's
 * own storage (`id`, `text`, `tags`, `importance`, `source`, `created_at`; no user, so the
 * protocol's default user or the one asked for) and `memorypool export`'s (the same plus
 * `user_id`, the Add provenance, `vec` and `model`). A line is checked with the rules of the
 * protocol's add, so a file cannot hold what the API would refuse; as the protocol does, a line
 * that fails them is skipped with a warning, not the whole file.
 */

/** The protocol's defaults for what a line leaves out (those of its add). */
const DEFAULT_TAGS: string[] = [];
const DEFAULT_IMPORTANCE = 0.5;
const DEFAULT_SOURCE = 'cli';

const optionalText = z.string({ error: 'must be a string' }).optional();
const optionalInteger = z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }).optional();

/** Any date `Date.parse` reads, kept as the same instant in the service's spelling (ISO 8601, UTC). */
const isoDate = (field: string) =>
  z
    .string({ error: `${field} must be a date string` })
    .refine((value) => !Number.isNaN(Date.parse(value)), { error: `${field} must be a valid date` })
    .transform((value) => new Date(Date.parse(value)).toISOString());

const { text, tags, importance, source, user_id, metadata, agent_id, run_id } = addParamsSchema.shape;

export const memoryLineSchema = z.object({
  id: idParamsSchema.shape.id,
  user_id,
  text,
  tags,
  importance,
  source,
  created_at: isoDate('created_at').optional(),
  metadata,
  agent_id,
  run_id,
  expires_at: isoDate('expires_at').optional(),
  version: z.number({ error: 'must be an integer' }).int({ error: 'must be an integer' }).min(1).optional(),
  updated_at: isoDate('updated_at').optional(),
  /** The versions the memory replaced, as `memorypool export` writes them. */
  history: z.array(memoryVersionSchema).optional(),
  session_id: optionalText,
  role: optionalText,
  occurred_at: isoDate('occurred_at').optional(),
  request_id: optionalText,
  message_index: optionalInteger,
  part: optionalInteger,
  parts: optionalInteger,
  vec: z
    .string({ error: 'must be a string' })
    // Decoded into float32s: a length that is not whole floats would end the import, not skip the line.
    .refine((value) => /^[A-Za-z0-9+/]*={0,2}$/.test(value) && Buffer.byteLength(value, 'base64') % 4 === 0 && value !== '', { error: 'must be base64 of float32 values' })
    .optional(),
  model: optionalText,
});

/** A line left out, and why (never its text: memory text is not logged). */
export interface SkippedLine {
  line: number;
  reason: string;
}

export interface MemoryFileContent {
  /** In file order, each (user, id) once. */
  records: PortableRecord[];
  /** Lines that are not a memory (not JSON, or failing a rule). */
  malformed: SkippedLine[];
  /** Lines repeating a (user, id) of an earlier line: the first wins. */
  duplicates: SkippedLine[];
}

/**
 * Reads a memories file's lines (numbered from 1; blank ones ignored). `userId` owns the lines
 * that name no user; `now` is the `created_at` of those that have none.
 */
export async function readMemoryLines(lines: AsyncIterable<string> | Iterable<string>, options: { userId?: string; now?: Date } = {}): Promise<MemoryFileContent> {
  const owner = options.userId ?? DEFAULT_USER;
  const now = (options.now ?? new Date()).toISOString();
  const content: MemoryFileContent = { records: [], malformed: [], duplicates: [] };
  const firstLine = new Map<string, number>();
  let lineNumber = 0;
  for await (const line of lines) {
    lineNumber++;
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      content.malformed.push({ line: lineNumber, reason: 'not valid JSON' });
      continue;
    }
    const result = memoryLineSchema.safeParse(parsed);
    if (!result.success) {
      const issue = result.error.issues[0];
      const field = issue.path.join('.');
      content.malformed.push({ line: lineNumber, reason: field && !issue.message.startsWith(field) ? `${field}: ${issue.message}` : issue.message });
      continue;
    }
    const notUnicode = loneSurrogateReason(parsed);
    if (notUnicode !== null) {
      content.malformed.push({ line: lineNumber, reason: notUnicode });
      continue;
    }
    const { user_id: named, tags: lineTags, importance: lineImportance, source: lineSource, created_at: createdAt, ...rest } = result.data;
    // The fields in the line's own order (defaults after), so an export imported and exported again is the same text.
    const record: PortableRecord = Object.assign(inLineOrder(parsed, rest), {
      ...rest,
      user_id: named ?? owner,
      tags: lineTags ?? DEFAULT_TAGS,
      importance: lineImportance ?? DEFAULT_IMPORTANCE,
      source: lineSource ?? DEFAULT_SOURCE,
      created_at: createdAt ?? now,
    });
    const key = JSON.stringify([record.user_id, record.id]);
    const first = firstLine.get(key);
    if (first !== undefined) {
      content.duplicates.push({ line: lineNumber, reason: `id ${JSON.stringify(record.id)} already on line ${first}` });
      continue;
    }
    firstLine.set(key, lineNumber);
    content.records.push(record);
  }
  return content;
}

/** An empty object whose keys are the line's (those the record keeps), in the line's order, to be filled. */
function inLineOrder(line: unknown, kept: object): Record<string, unknown> {
  const keys = Object.keys(line as object).filter((key) => key in kept || KEYS_WITH_DEFAULTS.has(key));
  return Object.fromEntries(keys.map((key) => [key, undefined]));
}
const KEYS_WITH_DEFAULTS = new Set(['user_id', 'tags', 'importance', 'source', 'created_at']);

/** Splits a whole file's bytes into lines, as a stream reader would. */
export function fileLines(content: Buffer): string[] {
  return content.toString('utf8').split(/\r?\n/);
}
