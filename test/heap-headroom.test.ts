import { execFile } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { growingPercent, HEADROOM_SEMI_SPACES, MAX_PERCENT, MIN_PERCENT, operatorSetsGrowing } from '../src/heap-headroom.js';
import { assertBuilt, COMPILED_MAIN } from './support/compiled.js';

const MB = 1024 * 1024;

describe('growingPercent', () => {
  it('leaves room for the semi-spaces above the live heap', () => {
    // Node 20: two semi-spaces of 16 MiB; 96 MiB live wants 48 MiB of room, half of it.
    expect(growingPercent(96 * MB, 32 * MB)).toBe(50);
    expect(((growingPercent(80 * MB, 64 * MB) / 100) * 80 * MB) / (32 * MB)).toBeGreaterThanOrEqual(HEADROOM_SEMI_SPACES);
  });

  it('is bounded both ways', () => {
    expect(growingPercent(10 * MB, 64 * MB)).toBe(MAX_PERCENT);
    expect(growingPercent(0, 64 * MB)).toBe(MAX_PERCENT);
    expect(growingPercent(2000 * MB, 64 * MB)).toBe(MIN_PERCENT);
  });
});

describe('operatorSetsGrowing', () => {
  it('finds the flag in either spelling, on the command line or in NODE_OPTIONS', () => {
    expect(operatorSetsGrowing(['--heap-growing-percent=50'], undefined)).toBe(true);
    expect(operatorSetsGrowing(['--heap-growing-percent=0'], undefined)).toBe(true);
    expect(operatorSetsGrowing([], '--max-old-space-size=4096 --heap_growing_percent=80')).toBe(true);
    expect(operatorSetsGrowing(['--enable-source-maps'], '--max-old-space-size=4096')).toBe(false);
  });
});

describe('keepHeapHeadroom', () => {
  beforeAll(assertBuilt);

  // What V8 itself reports: the factor of the limit it set at the last full collection. Node 20
  // prints it after that limit, "(2.2)"; Node 24 on its factor line, which there is the final one.
  const lastFactor = (trace: string): number | null => {
    let factor: number | null = null;
    for (const line of trace.split('\n')) {
      const match = /\[HeapController\] Limit: .*\((\d+\.\d)\)\s*$/.exec(line) ?? (/\(\d+\.\d\)\s*$/.test(line) ? null : /\[HeapController\] factor (\d+\.\d)/.exec(line));
      if (match) factor = Number(match[1]);
    }
    return factor;
  };

  it('sets the factor V8 uses after a full collection, and leaves an operator-set one', async () => {
    const module = pathToFileURL(path.join(path.dirname(COMPILED_MAIN), 'heap-headroom.js')).href;
    // 20-odd MB live, small beside the young generation: the percent set is above the floor.
    const script = `
      const { keepHeapHeadroom } = await import(${JSON.stringify(module)});
      globalThis.kept = Array.from({ length: 200_000 }, (_, i) => ({ i, text: 'memory ' + i }));
      const headroom = keepHeapHeadroom();
      globalThis.gc();
      await new Promise((resolve) => setTimeout(resolve, 50));
      globalThis.gc();
      console.log('percent=' + headroom.percent);
      headroom.stop();
    `;
    const run = promisify(execFile);
    const own = await run(process.execPath, ['--expose-gc', '--trace-gc-verbose', '--input-type=module', '-e', script], { maxBuffer: 16 * MB });
    const percent = Number(/percent=(\d+)/.exec(own.stdout)?.[1]);
    expect(percent).toBeGreaterThan(MIN_PERCENT);
    expect(lastFactor(own.stdout)).toBeCloseTo(1 + percent / 100, 1);

    const operators = await run(process.execPath, ['--expose-gc', '--trace-gc-verbose', '--heap-growing-percent=77', '--input-type=module', '-e', script], { maxBuffer: 16 * MB });
    expect(operators.stdout).toContain('percent=null');
    expect(lastFactor(operators.stdout)).toBeCloseTo(1.77, 1);
  }, 30_000);
});
