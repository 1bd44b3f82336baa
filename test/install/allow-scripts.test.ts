import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * npm 12 runs a dependency's install script only when package.json's `allowScripts` allows it,
 * and skips the others silently but for one warning: a new dependency with a script nobody
 * decided on (a native addon left unbuilt, say) would install "fine" and crash at the first start.
 * So every package with an install script in the lock has a decision here, and no entry outlives
 * its package. Entries are names only: npm honours a pinned allow (`pkg@1.2.3`) only when the lock
 * records each package's download address, and ours does not (omit-lockfile-registry-resolved),
 * so a pinned allow would be refused; the lock pins the versions. Why each one is allowed or
 * denied: CONTRIBUTING.md, "Install scripts".
 */

interface LockPackage {
  hasInstallScript?: boolean;
}

const manifest = JSON.parse(readFileSync('package.json', 'utf8')) as { allowScripts?: Record<string, boolean> };
const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, LockPackage> };
const allowScripts = manifest.allowScripts ?? {};

/** `node_modules/a/node_modules/@b/c` → `@b/c`. */
const nameOf = (lockPath: string): string => lockPath.slice(lockPath.lastIndexOf('node_modules/') + 'node_modules/'.length);

const withScripts = Object.entries(lock.packages)
  .filter(([lockPath, entry]) => lockPath !== '' && entry.hasInstallScript === true)
  .map(([lockPath]) => ({ name: nameOf(lockPath) }));

describe('allowScripts', () => {
  it('decides every install script in the lock, by name', () => {
    expect(withScripts.length).toBeGreaterThan(0);
    expect(withScripts.filter(({ name }) => typeof allowScripts[name] !== 'boolean')).toEqual([]);
    expect(Object.keys(allowScripts).filter((key) => /.@/.test(key))).toEqual([]);
  });

  it('names no package the lock no longer holds', () => {
    const present = new Set(withScripts.map(({ name }) => name));
    expect(Object.keys(allowScripts).filter((key) => !present.has(key))).toEqual([]);
  });
});
