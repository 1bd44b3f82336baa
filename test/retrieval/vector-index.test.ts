import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { VectorIndex } from '../../src/retrieval/vector-index.js';
import { tempDir } from '../helper.js';

function filled(count: number): VectorIndex {
  const index = VectorIndex.create(16, 64);
  for (let label = 0; label < count; label++) index.add(label, Float32Array.from({ length: 16 }, (_, i) => Math.sin(label * 16 + i)));
  return index;
}

describe('VectorIndex.write', () => {
  it('writes a file that reads back whole, empty or not', async () => {
    const dir = await tempDir();
    for (const count of [0, 1, 40]) {
      const file = path.join(dir, `index-${count}.hnsw`);
      await filled(count).write(file);
      expect((await VectorIndex.read(file, 16)).size).toBe(count);
    }
  });

  it('fails when the disk refuses the bytes, which hnswlib itself does not report', async () => {
    // /dev/full takes the open and answers every write with ENOSPC.
    await expect(filled(40).write('/dev/full')).rejects.toThrow(/cut short/);
  });
});
