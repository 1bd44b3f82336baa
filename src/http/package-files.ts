import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Files the package ships beside its code (the console's pages, package.json). This module
 * runs from src/http (tsx, tests) or from dist/src/http (the compiled package).
 */
const here = path.dirname(fileURLToPath(import.meta.url));
const twoUp = path.resolve(here, '../..');
export const PACKAGE_ROOT = path.basename(twoUp) === 'dist' ? path.dirname(twoUp) : twoUp;

let version: string | undefined;

export function packageVersion(): string {
  version ??= (JSON.parse(readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  return version;
}
