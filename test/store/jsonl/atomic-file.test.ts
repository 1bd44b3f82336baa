import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/errors.js';
import { tempName, writeAtomically, writeFully } from '../../../src/store/jsonl/atomic-file.js';
import { tempDir } from '../../support/helper.js';

async function caught(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(() => null, (error: unknown) => error);
}

describe('writeAtomically', () => {
  it('replaces the file with what was written, and leaves nothing else beside it', async () => {
    for (const durable of [true, false]) {
      const dir = await tempDir();
      const file = path.join(dir, 'f.json');
      await writeFile(file, 'old\n');
      await writeAtomically(file, (handle) => writeFully(handle, Buffer.from('new\n')), { durable });
      expect(await readFile(file, 'utf8')).toBe('new\n');
      expect(await readdir(dir)).toEqual(['f.json']);
    }
  });

  it('leaves the old file whole and no temp file when the write fails, as a storage error', async () => {
    const dir = await tempDir();
    const file = path.join(dir, 'f.json');
    await writeFile(file, 'old\n');
    const failure = Object.assign(new Error('no space left'), { code: 'ENOSPC' });
    const error = await caught(
      writeAtomically(file, async (handle) => {
        await writeFully(handle, Buffer.from('half of the n'));
        throw failure;
      }),
    );
    expect(isAppError(error) && error.code === 'STORAGE_UNAVAILABLE' && error.cause === failure).toBe(true);
    expect(await readFile(file, 'utf8')).toBe('old\n');
    expect(await readdir(dir)).toEqual(['f.json']);
  });

  it('reports a folder that is not there as a storage error, its errno kept', async () => {
    const error = await caught(writeAtomically(path.join(await tempDir(), 'gone', 'f.json'), (handle) => handle.writeFile('x')));
    expect(isAppError(error) && (error.cause as NodeJS.ErrnoException).code).toBe('ENOENT');
  });

  it('keeps the bytes the write gave, large ones too', async () => {
    const dir = await tempDir();
    await mkdir(path.join(dir, 'sub'));
    const file = path.join(dir, 'sub', 'big.bin');
    const bytes = Buffer.alloc(3 << 20, 7);
    bytes[bytes.length - 1] = 1;
    await writeAtomically(file, (handle) => writeFully(handle, bytes));
    expect((await readFile(file)).equals(bytes)).toBe(true);
  });
});

describe('tempName', () => {
  it('gives every call its own name beside the file, naming the process', () => {
    const names = Array.from({ length: 3 }, () => tempName('/d/f.json'));
    expect(new Set(names).size).toBe(3);
    for (const name of names) expect(name.startsWith(`/d/f.json.tmp-${process.pid}-`)).toBe(true);
  });
});
