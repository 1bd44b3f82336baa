import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ChangeLog } from '../../../src/store/jsonl/change-log.js';
import type { ChangeDraft } from '../../../src/store/memory-store.js';
import { register, tempDir } from '../../support/helper.js';

async function openLog(): Promise<ChangeLog> {
  const dir = await tempDir();
  const log = new ChangeLog(dir, path.join(dir, 'owners'));
  register(() => log.close());
  return log;
}

function drafts(count: number, at: string, user = (i: number) => `u${i % 3}`): ChangeDraft[] {
  return Array.from({ length: count }, (_, i) => ({ type: 'added', at, user_id: user(i), memory_id: `m${i}`, version: 1 }));
}

/** Swaps the text of the event `seq` for a line no JSON parser reads, keeping the file's length and newlines. */
async function garbleLine(log: ChangeLog, seq: number): Promise<void> {
  const lines = (await readFile(log.file, 'utf8')).split('\n');
  const index = lines.findIndex((line) => line.startsWith(`{"seq":${seq},`));
  lines[index] = '#'.repeat(lines[index].length);
  await writeFile(log.file, lines.join('\n'));
}

describe('the JSONL change log', () => {
  it('reads every event from any cursor across its bookmarks, and a torn last line is not an event', async () => {
    const log = await openLog();
    await log.append(drafts(700, new Date().toISOString()));
    for (const after of [0, 1, 255, 256, 257, 511, 600, 699]) {
      const read = await log.read(after, 5);
      expect(read.events.map((event) => event.seq)).toEqual(Array.from({ length: Math.min(5, 700 - after) }, (_, i) => after + 1 + i));
      expect(read.last).toBe(700);
    }
    const scoped = await log.read(300, 4, 'u1');
    expect(scoped.events.every((event) => event.user_id === 'u1' && event.seq > 300)).toBe(true);
    expect(scoped.events).toHaveLength(4);

    await writeFile(log.file, (await readFile(log.file, 'utf8')) + '{"seq":701,"type":"add');
    expect(await log.lastSeq()).toBe(700);
    expect((await log.read(698, 10)).events.map((event) => event.seq)).toEqual([699, 700]);
  });

  it('answers its last seq and a prune with nothing to drop from the file\'s ends only, not a scan of every line', async () => {
    const log = await openLog();
    expect(await log.lastSeq()).toBe(0);
    expect(await log.prune(Date.now())).toBe(0);
    await log.append(drafts(1000, new Date().toISOString()));
    // A line in the middle that no parser reads: a scan of the whole file would fail on it.
    await garbleLine(log, 500);
    const before = await readFile(log.file, 'utf8');
    expect(await log.lastSeq()).toBe(1000);
    expect(await log.prune(Date.now() - 86_400_000)).toBe(0);
    expect(await readFile(log.file, 'utf8')).toBe(before);
  });

  it('prunes the events older than the cutoff but the newest, and numbering goes on from it', async () => {
    const log = await openLog();
    await log.append(drafts(300, '2020-01-01T00:00:00.000Z'));
    await log.append(drafts(2, new Date().toISOString()));
    expect(await log.prune(Date.now() - 86_400_000)).toBe(300);
    const read = await log.read(0, 10);
    expect(read.events.map((event) => event.seq)).toEqual([301, 302]);
    expect(read.oldest).toBe(300);
    expect((await log.append(drafts(1, new Date().toISOString())))[0].seq).toBe(303);
    expect(await log.lastSeq()).toBe(303);
  });

  it('numbers appends made at once, by this log and another on the same file, in one order without gaps, each caller getting its own events', async () => {
    const log = await openLog();
    const other = new ChangeLog(path.dirname(log.file), path.join(path.dirname(log.file), 'owners'));
    register(() => other.close());
    const at = new Date().toISOString();
    // 60 callers of 1-4 events each, half through each log, all at once: most wait for a batch under way.
    const calls = Array.from({ length: 60 }, (_, c) =>
      Array.from({ length: 1 + (c % 4) }, (_, i): ChangeDraft => ({ type: 'added', at, user_id: `u${c}`, memory_id: `c${c}-${i}`, version: 1 })),
    );
    const results = await Promise.all(calls.map((mine, c) => (c % 2 === 0 ? log : other).append(mine)));
    results.forEach((events, c) => {
      expect(events.map((event) => event.memory_id)).toEqual(calls[c]!.map((draft) => draft.memory_id));
      // A caller's events are consecutive: one batch writes them together.
      events.forEach((event, i) => expect(event.seq).toBe(events[0]!.seq + i));
    });
    const total = calls.reduce((sum, mine) => sum + mine.length, 0);
    expect(results.flat().map((event) => event.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    // The file holds them in seq order, one line each, as either log reads it.
    const lines = (await readFile(log.file, 'utf8')).trim().split('\n').map((line) => JSON.parse(line) as { seq: number });
    expect(lines.map((line) => line.seq)).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    expect((await other.read(0, total)).events).toHaveLength(total);
    // The calls through one log are numbered in the order they were made.
    const firstSeqs = results.filter((_, c) => c % 2 === 0).map((events) => events[0]!.seq);
    expect(firstSeqs).toEqual([...firstSeqs].sort((a, b) => a - b));
  });
});
