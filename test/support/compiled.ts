import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The compiled entries the tests' child processes run, as users run them: `node dist/...js`,
 * without the TypeScript loader (which costs each spawn about a second of two cores' time, and
 * the CLI tests spawn hundreds).
 */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** The server (`node dist/src/main.js`), absolute like the CLI's, so a child's own cwd does not matter. */
export const COMPILED_MAIN = path.join(root, 'dist/src/main.js');
/** The command line (`memorypool`). */
export const COMPILED_CLI = path.join(root, 'dist/src/cli/memorypool.js');

let checked: Promise<void> | undefined;

/** Children run the compiled code: a dist/ older than src/ would test yesterday's code. Checked once a test file. */
export function assertBuilt(): Promise<void> {
  checked ??= checkBuilt();
  return checked;
}

async function checkBuilt(): Promise<void> {
  const entry = await stat(COMPILED_MAIN).catch(() => null);
  if (entry === null) throw new Error(`${COMPILED_MAIN} is missing: run \`npm run build\` first`);
  // The server's sources and the client package's, each beside the folder it compiles to.
  for (const [sources, output] of [['src', 'dist/src'], ['packages/client/src', 'packages/client/dist']]) {
    for (const file of await readdir(path.join(root, sources), { recursive: true })) {
      if (!file.endsWith('.ts')) continue;
      const source = await stat(path.join(root, sources, file));
      const compiled = await stat(path.join(root, output, file.replace(/\.ts$/, '.js'))).catch(() => null);
      if (compiled === null || compiled.mtimeMs < source.mtimeMs) throw new Error(`${output}/ is older than ${sources}/${file}: run \`npm run build\` first`);
    }
  }
}
