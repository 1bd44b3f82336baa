import { spawn } from 'node:child_process';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { acquireFileLock, isStale, readOwner, withFileLock } from '../../src/store/file-lock.js';
import { projectRoot } from '../support/server-process.js';
import { tempDir } from '../support/helper.js';

function runNode(args: string[]): Promise<{ code: number | null; pid: number; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: projectRoot, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, pid: child.pid!, stderr }));
  });
}

/** The pid of a process that has exited (the kernel may hand it out again later; the start time tells). */
async function deadPid(): Promise<number> {
  return (await runNode(['-e', '0'])).pid;
}

describe('file lock', () => {
  it('lets one holder in at a time within a process', async () => {
    const lock = path.join(await tempDir(), 'locks', 'u.lock');
    let inside = 0;
    let most = 0;
    await Promise.all(
      Array.from({ length: 20 }, () =>
        withFileLock(lock, async () => {
          most = Math.max(most, ++inside);
          await new Promise((resolve) => setImmediate(resolve));
          inside--;
        }),
      ),
    );
    expect(most).toBe(1);
    expect(await readdir(path.dirname(lock))).toEqual([]);
  });

  it('lets one holder in at a time across processes: no increment of a shared counter is lost', async () => {
    const dir = await tempDir();
    const lock = path.join(dir, 'counter.lock');
    const counter = path.join(dir, 'counter');
    const worker = path.join(projectRoot, 'test/support/lock-worker.ts');
    const runs = await Promise.all(Array.from({ length: 3 }, () => runNode(['--import', 'tsx', worker, lock, counter, '40'])));
    for (const run of runs) expect(run.stderr).toBe('');
    expect(await readFile(counter, 'utf8')).toBe('120');
  });

  it('breaks at once the lock of a dead process, and of a pid now held by another process', async () => {
    const dir = await tempDir();
    const lock = path.join(dir, 'u.lock');
    await writeFile(lock, JSON.stringify({ pid: await deadPid(), host: os.hostname(), start: null, nonce: 'dead' }));
    await withFileLock(lock, async () => {
      expect((await readOwner(lock)) as { pid: number }).toMatchObject({ pid: process.pid });
    }, { timeoutMs: 2_000 });
    // This very pid, but started at another time: the pid was reused.
    await writeFile(lock, JSON.stringify({ pid: process.pid, host: os.hostname(), start: '1', nonce: 'reused' }));
    expect(isStale({ pid: process.pid, host: os.hostname(), start: '1', nonce: 'reused' })).toBe(true);
    await withFileLock(lock, async () => undefined, { timeoutMs: 2_000 });
    await writeFile(lock, 'not an owner');
    await withFileLock(lock, async () => undefined, { timeoutMs: 2_000 });
    expect(await readdir(dir)).toEqual([]);
  });

  it('never breaks the lock of a live process, nor one taken on another host: the waiter gives up with STORAGE_UNAVAILABLE', async () => {
    const dir = await tempDir();
    const lock = path.join(dir, 'u.lock');
    const release = await acquireFileLock(lock);
    await expect(withFileLock(lock, async () => undefined, { timeoutMs: 100 })).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    await release();
    const elsewhere = { pid: await deadPid(), host: `not-${os.hostname()}`, start: null, nonce: 'remote' };
    expect(isStale(elsewhere)).toBe(false);
    await writeFile(lock, JSON.stringify(elsewhere));
    await expect(withFileLock(lock, async () => undefined, { timeoutMs: 100 })).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE' });
    expect(await readOwner(lock)).toMatchObject({ nonce: 'remote' });
  });

  it('a holder whose lock was broken does not remove the next holder\'s lock on release', async () => {
    const lock = path.join(await tempDir(), 'u.lock');
    const release = await acquireFileLock(lock);
    await writeFile(lock, JSON.stringify({ pid: process.pid, host: os.hostname(), start: null, nonce: 'next-holder' }));
    await release();
    expect(await readOwner(lock)).toMatchObject({ nonce: 'next-holder' });
  });

  describe('with an owner file kept for the process (ownerDir)', () => {
    it('lets one holder in at a time, within a process and across processes, and leaves only the owner files', async () => {
      const dir = await tempDir();
      const ownerDir = path.join(dir, 'owners');
      const lock = path.join(dir, 'counter.lock');
      const counter = path.join(dir, 'counter');
      let inside = 0;
      let most = 0;
      await Promise.all(
        Array.from({ length: 10 }, () =>
          withFileLock(lock, async () => {
            most = Math.max(most, ++inside);
            await new Promise((resolve) => setImmediate(resolve));
            inside--;
          }, { ownerDir }),
        ),
      );
      expect(most).toBe(1);
      const worker = path.join(projectRoot, 'test/support/lock-worker.ts');
      const runs = await Promise.all(Array.from({ length: 3 }, () => runNode(['--import', 'tsx', worker, lock, counter, '40', ownerDir])));
      for (const run of runs) expect(run.stderr).toBe('');
      expect(await readFile(counter, 'utf8')).toBe('120');
      // The lock is gone; the workers removed their owner files as they exited; this process's stays.
      expect((await readdir(dir)).sort()).toEqual(['counter', 'owners']);
      const owners = await readdir(ownerDir);
      expect(owners).toHaveLength(1);
      expect(await readOwner(path.join(ownerDir, owners[0]))).toMatchObject({ pid: process.pid });
    });

    it('the lock of a process killed while holding it is the dead owner\'s file: broken at once, and the file removed by the next process', async () => {
      const dir = await tempDir();
      const ownerDir = path.join(dir, 'owners');
      const lock = path.join(dir, 'u.lock');
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(projectRoot, 'test/support/lock-worker.ts'), lock, '-', 'hold', ownerDir], { cwd: projectRoot, stdio: ['ignore', 'pipe', 'inherit'] });
      await new Promise<void>((resolve) => child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('held') && resolve()));
      const [deadOwner] = await readdir(ownerDir);
      // The lock's name and the child's owner file are one file.
      expect((await stat(lock)).ino).toBe((await stat(path.join(ownerDir, deadOwner))).ino);
      child.kill('SIGKILL');
      await new Promise((resolve) => child.on('close', resolve));
      await withFileLock(lock, async () => {
        expect(await readOwner(lock)).toMatchObject({ pid: process.pid });
      }, { timeoutMs: 2_000, ownerDir });
      const left = await readdir(ownerDir);
      expect(left).toHaveLength(1);
      expect(left).not.toContain(deadOwner);
      await expect(stat(lock)).rejects.toMatchObject({ code: 'ENOENT' });
    });

    it('makes its owner file again when its folder was deleted, and never removes a lock it no longer holds', async () => {
      const dir = await tempDir();
      const ownerDir = path.join(dir, 'sync', 'owners');
      const lock = path.join(dir, 'sync', 'u.lock');
      await withFileLock(lock, async () => undefined, { ownerDir });
      const { rm } = await import('node:fs/promises');
      await rm(path.join(dir, 'sync'), { recursive: true });
      const release = await acquireFileLock(lock, { ownerDir });
      expect(await readOwner(lock)).toMatchObject({ pid: process.pid });
      // Replaced meanwhile (as a breaker would): release leaves the other holder's lock.
      await rm(lock);
      await writeFile(lock, JSON.stringify({ pid: process.pid, host: os.hostname(), start: null, nonce: 'next-holder' }));
      await release();
      expect(await readOwner(lock)).toMatchObject({ nonce: 'next-holder' });
    });
  });
});
