import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * THE LAYER ORDER of src/, written down here and nowhere else (docs point to this file): lowest
 * first. A module may import its own layer and those below it, never one above. Entries are
 * folders (ending in /) or files, relative to src/.
 */
const LAYERS: ReadonlyArray<{ name: string; members: readonly string[] }> = [
  { name: 'foundation: the domain nouns, errors, logging, tracing, configuration', members: ['domain/', 'errors.ts', 'telemetry/', 'logger.ts', 'config.ts'] },
  { name: 'retrieval: lexical, vector and fused scoring (pure)', members: ['retrieval/'] },
  { name: 'embedding, ingest, store', members: ['embedding/', 'ingest/', 'store/'] },
  { name: 'memory: the service and the webhooks it delivers', members: ['memory/', 'webhooks/'] },
  { name: 'protocol: request schemas, validation, the shared handlers', members: ['protocol/'] },
  { name: 'assembly: the service opened from config; the process cluster; the service threads; the server process heap', members: ['open-service.ts', 'server-cluster.ts', 'threads/', 'heap-headroom.ts'] },
  { name: 'http and the clients', members: ['http/', 'client/'] },
  { name: 'mcp and the framework adapters', members: ['mcp/', 'integrations/'] },
  { name: 'entry points: the server, the CLI, the in-process pool', members: ['server-app.ts', 'main.ts', 'cli/', 'in-process.ts', 'index.ts'] },
];

const SRC = path.resolve(import.meta.dirname, '../../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [path.relative(SRC, full).split(path.sep).join('/')] : [];
  });
}

function layerOf(file: string): number {
  const index = LAYERS.findIndex((layer) => layer.members.some((member) => (member.endsWith('/') ? file.startsWith(member) : file === member)));
  if (index < 0) throw new Error(`src/${file} is in no layer: add it to LAYERS in test/architecture/layers.test.ts`);
  return index;
}

/** Every relative module a file names: imports, re-exports, `import type` and dynamic `import()`. */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(path.join(SRC, file), 'utf8'), true, true);
  return info.importedFiles
    .map((imported) => imported.fileName)
    .filter((name) => name.startsWith('.'))
    .map((name) => path.posix.normalize(path.posix.join(path.posix.dirname(file), name)).replace(/\.js$/, '.ts'));
}

describe('the layers of src/', () => {
  const files = sourceFiles(SRC);

  it('place every module', () => {
    for (const file of files) expect(() => layerOf(file), file).not.toThrow();
  });

  it('only point down: no module imports one of a higher layer', () => {
    const upward: string[] = [];
    for (const file of files) {
      for (const target of importsOf(file)) {
        if (layerOf(target) > layerOf(file)) upward.push(`${file} -> ${target}`);
      }
    }
    expect(upward).toEqual([]);
  });

  it('catch an upward import (the check itself can fail)', () => {
    expect(layerOf('store/memory-store.ts')).toBeLessThan(layerOf('memory/memory-service.ts'));
    expect(importsOf('memory/memory-service.ts')).toContain('store/memory-store.ts');
    expect(importsOf('mcp/http-route.ts')).toContain('mcp/memory-tools.ts');
  });
});
