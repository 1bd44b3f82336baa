import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readdir, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { LegacyMemoriesFile } from '../../src/store/legacy-memories.js';
import { tempDir } from '../support/helper.js';

const SUMMARY = { imported: 1, already_stored: 0, malformed: 0, duplicates: 0 };

async function withLegacyFile(): Promise<{ dataDir: string; legacy: LegacyMemoriesFile }> {
  const dataDir = await tempDir('memorypool-legacy-');
  await writeFile(path.join(dataDir, 'memories.jsonl'), '{"id": "a", "text": "a memory"}\n');
  return { dataDir, legacy: new LegacyMemoriesFile(dataDir) };
}

async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await once(child, 'exit');
  return child.pid!;
}

describe('LegacyMemoriesFile', () => {
  it('is pending only while a file is there and no marker says it was taken in', async () => {
    const dataDir = await tempDir('memorypool-legacy-');
    expect(await new LegacyMemoriesFile(dataDir).pending()).toBe(false);
    const { legacy } = await withLegacyFile();
    expect(await legacy.pending()).toBe(true);
    const result = await legacy.claim();
    if (result.status !== 'claimed') throw new Error(`not claimed: ${result.status}`);
    await result.claim.markTakenIn(await result.claim.read(), SUMMARY);
    await result.claim.release();
    expect(await legacy.pending()).toBe(false);
    expect(await legacy.claim()).toEqual({ status: 'taken-in' });
  });

  it('lets one of two claims made at once win; the other sees it held until it is released', async () => {
    const { dataDir, legacy } = await withLegacyFile();
    const results = await Promise.all([legacy.claim(), new LegacyMemoriesFile(dataDir).claim()]);
    expect(results.map((result) => result.status).sort()).toEqual(['claimed', 'held']);
    const won = results.find((result) => result.status === 'claimed')!;
    if (won.status !== 'claimed') throw new Error('unreachable');
    await won.claim.release();
    expect((await legacy.claim()).status).toBe('claimed');
  });

  it('breaks a claim left by a process that is gone, or left empty long ago, and claims it', async () => {
    const { dataDir, legacy } = await withLegacyFile();
    const claimFile = path.join(dataDir, 'memories.jsonl.importing');
    await writeFile(claimFile, JSON.stringify({ pid: await deadPid(), token: 'left-behind' }));
    expect((await legacy.claim()).status).toBe('claimed');

    const empty = await withLegacyFile();
    const emptyClaim = path.join(empty.dataDir, 'memories.jsonl.importing');
    await writeFile(emptyClaim, '');
    expect(await empty.legacy.claim()).toEqual({ status: 'held', pid: 0 });
    const longAgo = new Date(Date.now() - 60_000);
    await utimes(emptyClaim, longAgo, longAgo);
    expect((await empty.legacy.claim()).status).toBe('claimed');
    expect((await readdir(empty.dataDir)).sort()).toEqual(['memories.jsonl', 'memories.jsonl.importing']);
  });
});
