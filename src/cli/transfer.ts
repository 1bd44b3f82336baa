import { createReadStream, createWriteStream } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import type { MemoryService } from '../memory/memory-service.js';
import { parseOr400 } from '../protocol/validation.js';
import { readMemoryLines } from '../protocol/memory-file.js';
import { userScopeSchema } from '../protocol/memorypool-schemas.js';
import { Progress } from './progress.js';

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

/**
 * Imports a memories file: `memorypool export`'s, or the MemoryPool protocol's own (lines naming no
 * user go to `userId`, else the default user). A line that is not a memory is skipped with a
 * warning naming it, as the protocol does, and the import goes on.
 */
export async function importPool(service: MemoryService, file: string, options: { userId?: string } = {}): Promise<unknown> {
  // Checked before the file is read, by the rule every door applies to a user id.
  const { user_id: userId } = parseOr400(userScopeSchema, { user_id: options.userId });
  const input = file === '-' ? process.stdin : createReadStream(file);
  const { records, malformed, duplicates } = await readMemoryLines(createInterface({ input, crlfDelay: Infinity }), { userId });
  for (const { line, reason } of malformed) process.stderr.write(`memorypool: ${file}:${line}: malformed line skipped (${reason})\n`);
  for (const { line, reason } of duplicates) process.stderr.write(`memorypool: ${file}:${line}: duplicate line skipped (${reason})\n`);
  const progress = new Progress('import', records.length, 'memories');
  let reported = 0;
  const outcome = await service.importRecords(records, (done) => {
    progress.tick(done - reported);
    reported = done;
  });
  progress.finish();
  return { ...outcome, malformed: malformed.length, duplicates: duplicates.length };
}
