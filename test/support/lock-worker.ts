/**
 * A child process for test/store/file-lock.test.ts: `<lock> <counter file> <rounds>` increments
 * the counter file `rounds` times, each a read, a pause and a write under the lock, so two
 * processes holding it at once would lose increments. A fourth argument, when given, is the
 * `ownerDir` the locks are taken with; `hold` as the third makes the process take the lock, say
 * `held` on stdout and wait to be killed.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { withFileLock } from '../../src/store/file-lock.js';

const [lockPath, counterFile, rounds, ownerDir] = process.argv.slice(2);
const options = ownerDir ? { ownerDir } : {};
if (rounds === 'hold') {
  await withFileLock(lockPath, async () => {
    process.stdout.write('held\n');
    await new Promise(() => setInterval(() => undefined, 1_000));
  }, options);
}
for (let round = 0; round < Number(rounds); round++) {
  await withFileLock(lockPath, async () => {
    const value = Number((await readFile(counterFile, 'utf8').catch(() => '0')) || '0');
    await new Promise((resolve) => setImmediate(resolve));
    await writeFile(counterFile, String(value + 1));
  }, options);
}
