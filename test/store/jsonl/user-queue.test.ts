import { describe, expect, it } from 'vitest';
import { UserQueue } from '../../../src/store/jsonl/user-queue.js';

const later = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('UserQueue', () => {
  it('runs one user\'s tasks one at a time in arrival order, past a failed one, beside other users\' tasks', async () => {
    const queue = new UserQueue();
    const events: string[] = [];
    const task = (name: string, fail = false) => async () => {
      events.push(`${name} start`);
      await later();
      events.push(`${name} end`);
      if (fail) throw new Error(name);
      return name;
    };
    const results = Promise.allSettled([queue.run('u', task('u1')), queue.run('u', task('u2', true)), queue.run('v', task('v1')), queue.run('u', task('u3'))]);
    await queue.settled();
    expect((await results).map((result) => result.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    const u = events.filter((event) => event.startsWith('u'));
    expect(u).toEqual(['u1 start', 'u1 end', 'u2 start', 'u2 end', 'u3 start', 'u3 end']);
    // v's task did not wait for u's.
    expect(events.indexOf('v1 start')).toBeLessThan(events.indexOf('u1 end'));
  });
});
