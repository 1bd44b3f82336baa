import { describe, expect, it } from 'vitest';
import type { BenchUser } from '../../eval/benchmark.js';
import { TurnLocator, planAdds } from '../../eval/replay-plan.js';

function user(turnWords: number[]): BenchUser {
  return {
    userId: 'u',
    sessions: [
      {
        sessionId: 's',
        sessionKey: 's',
        turns: turnWords.map((words, index) => ({
          turnId: `t${index}`,
          role: index % 2 ? 'assistant' : 'user',
          content: Array.from({ length: words }, () => 'w').join(' '),
          timestamp: 1000,
        })),
      },
    ],
  };
}

describe('planAdds', () => {
  it('keeps a short session in one Add', () => {
    const adds = planAdds(user([3, 4, 5]));
    expect(adds).toHaveLength(1);
    expect(adds[0]).toMatchObject({ requestId: 'u/s/0', userId: 'u', sessionId: 's', turnIds: ['t0', 't1', 't2'] });
    expect(adds[0].messages[0]).toEqual({ role: 'user', content: 'w w w', timestamp: 1000 });
  });

  it('sends no timestamps when asked, with the same request ids and cuts', () => {
    const adds = planAdds(user([3, 4, 5]), undefined, false);
    expect(adds[0].requestId).toBe('u/s/0');
    expect(adds[0].messages.map((message) => 'timestamp' in message)).toEqual([false, false, false]);
  });

  it('cuts at 20 messages', () => {
    const adds = planAdds(user(Array.from({ length: 45 }, () => 1)));
    expect(adds.map((add) => add.messages.length)).toEqual([20, 20, 5]);
    expect(adds[1].turnIds[0]).toBe('t20');
  });

  it('cuts before the message that would pass 2,000 words; a longer message travels alone', () => {
    const adds = planAdds(user([1500, 400, 200, 2500, 10]));
    expect(adds.map((add) => add.turnIds)).toEqual([['t0', 't1'], ['t2'], ['t3'], ['t4']]);
  });

  it('honours custom limits', () => {
    expect(planAdds(user([1, 1, 1]), { maxMessages: 2, maxWords: 100 }).map((add) => add.turnIds.length)).toEqual([2, 1]);
  });
});

describe('TurnLocator', () => {
  it('maps (user, request, message index) back to the turn', () => {
    const adds = planAdds(user(Array.from({ length: 25 }, () => 1)));
    const locator = new TurnLocator(adds);
    expect(locator.locate('u', 'u/s/1', 2)).toBe('t22');
    expect(locator.locate('u', 'u/s/1', 9)).toBeUndefined();
    expect(locator.locate('other', 'u/s/1', 2)).toBeUndefined();
    expect(locator.locate('u', undefined, 2)).toBeUndefined();
  });
});
