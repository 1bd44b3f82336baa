import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The client package (packages/client, `memorypool-client`) stands alone: no dependency of any
 * kind, no import outside its own folder, no Node built-in (it runs in browsers). And the server
 * does not lean on it: only the modules that hand the client to an application (the
 * `memorypool/client` re-export, the in-process pool that answers with its errors and types, the
 * framework adapters that take either) and the type contract that holds it to the server's schemas
 * name it.
 */

const ROOT = path.resolve(import.meta.dirname, '../..');
const CLIENT = path.join(ROOT, 'packages/client');

const USERS_OF_THE_CLIENT = ['src/client/index.ts', 'src/client/contract.ts', 'src/in-process.ts', 'src/integrations/ai-sdk.ts', 'src/integrations/langchain.ts'];

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(dir, file));
}

/** Every module a file names: imports, re-exports, `import type` and dynamic `import()`. */
function importsOf(file: string): string[] {
  return ts.preProcessFile(readFileSync(file, 'utf8'), true, true).importedFiles.map((imported) => imported.fileName);
}

describe('the client package', () => {
  it('has no dependencies of any kind', () => {
    const manifest = JSON.parse(readFileSync(path.join(CLIENT, 'package.json'), 'utf8')) as Record<string, unknown>;
    for (const field of ['dependencies', 'peerDependencies', 'optionalDependencies', 'bundleDependencies', 'devDependencies']) expect(manifest[field], field).toBeUndefined();
  });

  it('imports only its own modules', () => {
    const outside: string[] = [];
    for (const file of tsFiles(path.join(CLIENT, 'src'))) {
      for (const name of importsOf(file)) {
        const inside = name.startsWith('.') && path.resolve(path.dirname(file), name).startsWith(path.join(CLIENT, 'src') + path.sep);
        if (!inside) outside.push(`${path.relative(ROOT, file)} -> ${name}`);
      }
    }
    expect(outside).toEqual([]);
  });

  it('is named in src/ only by the modules that hand it to an application', () => {
    const users = tsFiles(path.join(ROOT, 'src')).filter((file) => importsOf(file).some((name) => name === 'memorypool-client' || name.startsWith('memorypool-client/')));
    expect(users.map((file) => path.relative(ROOT, file)).sort()).toEqual([...USERS_OF_THE_CLIENT].sort());
  });
});
