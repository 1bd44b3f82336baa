import { describe, expect, it } from 'vitest';
import { mapConcurrent } from '../../eval/pool.js';

describe('mapConcurrent', () => {
  it('keeps order and never exceeds the limit', async () => {
    let active = 0;
    let peak = 0;
    const results = await mapConcurrent([5, 1, 4, 2, 3, 0], 2, async (value) => {
      active++;
      peak = Math.max(peak, active);
      await new Promise((resolve) => setTimeout(resolve, value));
      active--;
      return value * 10;
    });
    expect(results).toEqual([50, 10, 40, 20, 30, 0]);
    expect(peak).toBe(2);
  });

  it('rejects with the first failure after started tasks settle', async () => {
    const started: number[] = [];
    await expect(
      mapConcurrent([1, 2, 3, 4], 2, async (value) => {
        started.push(value);
        if (value === 1) throw new Error('boom');
        await new Promise((resolve) => setTimeout(resolve, 5));
        return value;
      }),
    ).rejects.toThrow('boom');
    expect(started).toEqual([1, 2]);
  });
});
