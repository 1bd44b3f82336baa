/**
 * A child process for test/store/file-lock.test.ts: `<lock> <counter file> <rounds>` increments
 * the counter file `rounds` times, each a read, a pause and a write under the lock, so two
 * processes holding it at once would lose increments.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { withFileLock } from '../../src/store/file-lock.js';

const [lockPath, counterFile, rounds] = process.argv.slice(2);
for (let round = 0; round < Number(rounds); round++) {
  await withFileLock(lockPath, async () => {
    const value = Number((await readFile(counterFile, 'utf8').catch(() => '0')) || '0');
    await new Promise((resolve) => setImmediate(resolve));
    await writeFile(counterFile, String(value + 1));
  });
}
