import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { bytesModule, compileDotKernel, KERNEL_BYTES_MODULE } from '../../../scripts/kernel/compile-dot-kernel.js';

describe('the dot kernel build', () => {
  it('dot-kernel-bytes.ts is what dot-kernel.wat compiles to (run `npm run build:kernel` after editing the .wat)', async () => {
    const bytes = await compileDotKernel();
    expect(new WebAssembly.Module(bytes)).toBeInstanceOf(WebAssembly.Module);
    expect(await readFile(KERNEL_BYTES_MODULE, 'utf8')).toBe(bytesModule(bytes));
  });
});
