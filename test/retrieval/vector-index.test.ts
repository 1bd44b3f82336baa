import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { VectorIndex } from '../../src/retrieval/vector-index.js';
import { tempDir } from '../support/helper.js';

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

  it('leaves the graph alone while hnswlib writes it: an insert is refused, a removal waits for the end and is left out of searches meanwhile', async () => {
    const file = path.join(await tempDir(), 'index.hnsw');
    const index = filled(40);
    const vectorOf = (label: number) => Float32Array.from({ length: 16 }, (_, i) => Math.sin(label * 16 + i));
    // The seam: hnswlib's write (on its worker thread) starts only once the test lets it, so the
    // test acts while the write is under way, as a request does during a flush of a large graph.
    const native = (index as unknown as { index: { writeIndex(file: string): Promise<boolean>; markDelete(label: number): void } }).index;
    const writeIndex = native.writeIndex.bind(native);
    const markDelete = native.markDelete.bind(native);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const markedDuringWrite: number[] = [];
    let writing = true;
    Object.defineProperty(native, 'writeIndex', { value: async (target: string) => (await released, writeIndex(target)) });
    Object.defineProperty(native, 'markDelete', { value: (label: number) => (writing && markedDuringWrite.push(label), markDelete(label)) });

    const written = index.write(file);
    expect(index.isWriting).toBe(true);
    expect(() => index.add(40, vectorOf(40))).toThrow(/being written/);
    index.remove(7);
    expect(index.has(7)).toBe(false);
    expect(index.size).toBe(39);
    expect(index.search(vectorOf(7), 5).map((hit) => hit.label)).not.toContain(7);
    expect(index.search(vectorOf(7), 5, (label) => label !== 8).map((hit) => hit.label)).not.toContain(8);
    writing = false;
    release();
    await written;

    expect(markedDuringWrite).toEqual([]);
    expect(index.isWriting).toBe(false);
    expect(index.search(vectorOf(7), 5).map((hit) => hit.label)).not.toContain(7);
    index.add(40, vectorOf(40));
    expect(index.size).toBe(40);
    // The file holds the graph as it was when the write began, label 7 included.
    expect((await VectorIndex.read(file, 16)).has(7)).toBe(true);
  });
});
