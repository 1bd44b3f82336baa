import { writeFile } from 'node:fs/promises';
import { bytesModule, compileDotKernel, KERNEL_BYTES_MODULE } from './kernel/compile-dot-kernel.js';

/** `npm run build:kernel`: compiles src/retrieval/corpus/dot-kernel.wat into dot-kernel-bytes.ts. */
const bytes = await compileDotKernel();
await writeFile(KERNEL_BYTES_MODULE, bytesModule(bytes));
console.log(`dot kernel: ${bytes.length} bytes → ${KERNEL_BYTES_MODULE}`);
