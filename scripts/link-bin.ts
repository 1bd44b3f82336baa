import { chmodSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * npm links a package's `bin` for the projects that depend on it, not for the package itself;
 * this links `node_modules/.bin/memorypool` in a clone so the command runs there after
 * `npm install` like any dependency's (run from `prepare`, after the build).
 */
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const target = path.join(root, 'dist/src/cli/memorypool.js');
const binDir = path.join(root, 'node_modules/.bin');
const link = path.join(binDir, 'memorypool');
const relative = path.relative(binDir, target);

chmodSync(target, 0o755);
mkdirSync(binDir, { recursive: true });
let current: string | null = null;
try {
  current = readlinkSync(link);
} catch {
  current = null;
}
if (current !== relative) {
  rmSync(link, { force: true });
  symlinkSync(relative, link);
}
process.stderr.write(`linked ${path.relative(root, link)} -> ${relative}\n`);
