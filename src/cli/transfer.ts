import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { createError } from '../errors.js';
import type { MemoryService, PortableRecord } from '../memory/memory-service.js';
import { Progress } from './progress.js';

const portableRecordSchema = z.object({
  id: z.string().min(1),
  user_id: z.string().min(1),
  text: z.string().refine((text) => text.trim() !== '', 'text must not be empty'),
  tags: z.array(z.string()).default([]),
  importance: z.number().min(0).max(1).default(0.5),
  source: z.string().default('import'),
  created_at: z.string().refine((value) => !Number.isNaN(Date.parse(value)), 'created_at must be an ISO date'),
  version: z.number().int().min(1).optional(),
  updated_at: z.string().optional(),
  metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
  history: z
    .array(
      z.object({
        version: z.number().int().min(1),
        text: z.string(),
        tags: z.array(z.string()),
        importance: z.number(),
        metadata: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
        updated_at: z.string(),
      }),
    )
    .optional(),
  session_id: z.string().optional(),
  role: z.string().optional(),
  occurred_at: z.string().optional(),
  request_id: z.string().optional(),
  message_index: z.number().int().optional(),
  part: z.number().int().optional(),
  parts: z.number().int().optional(),
  vec: z.string().optional(),
  model: z.string().optional(),
});

/** Writes JSONL to a file or stdout; the summary goes to stderr so stdout stays pure data. */
export async function exportPool(service: MemoryService, options: { user?: string; out?: string }): Promise<unknown> {
  const users = options.user !== undefined ? [options.user] : await service.listUsers();
  const output = options.out ? createWriteStream(options.out, { mode: 0o600 }) : process.stdout;
  let count = 0;
  for (const userId of users) {
    for (const record of await service.exportRecords(userId)) {
      if (!output.write(JSON.stringify(record) + '\n')) await once(output, 'drain');
      count++;
    }
  }
  if (options.out) {
    await new Promise<void>((resolve, reject) => (output as ReturnType<typeof createWriteStream>).end((error?: Error | null) => (error ? reject(error) : resolve())));
    return { exported: count, users: users.length, file: options.out };
  }
  process.stderr.write(`exported ${count} memories of ${users.length} users\n`);
  return undefined;
}

export async function importPool(service: MemoryService, file: string): Promise<unknown> {
  const input = file === '-' ? process.stdin : createReadStream(file);
  const records: PortableRecord[] = [];
  let lineNumber = 0;
  for await (const line of createInterface({ input, crlfDelay: Infinity })) {
    lineNumber++;
    if (line.trim() === '') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(line);
    } catch {
      throw createError('INVALID_PARAMETER', `${file}:${lineNumber}: not valid JSON`);
    }
    const result = portableRecordSchema.safeParse(parsed);
    if (!result.success) throw createError('INVALID_PARAMETER', `${file}:${lineNumber}: ${result.error.issues[0].path.join('.')} ${result.error.issues[0].message}`);
    records.push(result.data);
  }
  const progress = new Progress('import', records.length, 'memories');
  let reported = 0;
  const outcome = await service.importRecords(records, (done) => {
    progress.tick(done - reported);
    reported = done;
  });
  progress.finish();
  return outcome;
}
