import type { Logger } from '../logger.js';
import { errorMessage } from '../memory/memory-records.js';
import type { MemoryService } from '../memory/memory-service.js';
import { LegacyMemoriesFile, type LegacyClaim, type TakeInSummary } from '../store/legacy-memories.js';
import { fileLines, readMemoryLines } from './memory-file.js';

/** How often (ms) an opener waiting for another process's take-in looks again. */
const CLAIM_POLL_MS = 200;

/**
 * Takes in the MemoryPool tool's `memories.jsonl` at the data directory's root, once: its
 * memories go to the protocol's default user with their ids, texts, tags, importance, source and
 * `created_at` (which stays the memory's time for recency and decay, and for retention: it is when
 * the tool stored it), embedded once. Ids the user already holds are not stored again, so a take-in
 * cut short runs again harmlessly; the marker written after the memories are durable ends it for
 * good, and the file is never changed. Only the JSONL store: a PostgreSQL pool is not the data
 * directory (`memorypool import` the file there).
 *
 * A take-in that fails (disk full, say) is logged and does not stop the open: nothing is marked,
 * so the next open tries again.
 */
export async function takeInLegacyMemories(service: MemoryService, logger: Logger): Promise<TakeInSummary | null> {
  if (service.store.kind !== 'jsonl') return null;
  const legacy = new LegacyMemoriesFile(service.dataDir);
  if (!(await legacy.pending())) return null;
  let claim: LegacyClaim | null = null;
  try {
    claim = await waitForClaim(legacy, logger);
    if (!claim) return null;
    return await takeIn(service, legacy.file, claim, logger);
  } catch (error) {
    logger.error({ file: legacy.file, err: errorMessage(error) }, 'taking in the MemoryPool memories file failed; the next start tries again');
    return null;
  } finally {
    await claim?.release().catch(() => undefined);
  }
}

/** The claim, or null once another process has taken the file in (waiting while it does). */
async function waitForClaim(legacy: LegacyMemoriesFile, logger: Logger): Promise<LegacyClaim | null> {
  let waiting = false;
  for (;;) {
    const result = await legacy.claim();
    if (result.status === 'claimed') return result.claim;
    if (result.status === 'taken-in') return null;
    if (!waiting) logger.warn({ file: legacy.file, pid: result.pid }, 'another process is taking in the MemoryPool memories file; waiting for it');
    waiting = true;
    await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
  }
}

async function takeIn(service: MemoryService, file: string, claim: LegacyClaim, logger: Logger): Promise<TakeInSummary> {
  const content = await claim.read();
  const { records, malformed, duplicates } = await readMemoryLines(fileLines(content));
  for (const { line, reason } of malformed) logger.warn({ file, line, reason }, 'malformed line of the MemoryPool memories file skipped');
  for (const { line, reason } of duplicates) logger.warn({ file, line, reason }, 'duplicate id in the MemoryPool memories file skipped (the first line wins)');
  const outcome = await service.importRecords(records);
  const summary: TakeInSummary = { imported: outcome.imported, already_stored: outcome.skipped, malformed: malformed.length, duplicates: duplicates.length };
  await claim.markTakenIn(content, summary);
  // At warn, so that a command (which logs warnings only) shows the one-time change too.
  logger.warn({ file, ...summary }, `took in the MemoryPool memories file: ${summary.imported} memories in, ${summary.malformed} malformed lines skipped`);
  return summary;
}
