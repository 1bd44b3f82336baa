/**
 * `memorypool`: the pool in this process (`openMemoryPool`), with the HTTP client's errors and
 * types, so moving between `openMemoryPool(...)` and `new MemoryPoolClient(...)` is one line.
 */
export { openMemoryPool, type MemoryPool, type OpenOptions } from './in-process.js';
export * from './client/index.js';
