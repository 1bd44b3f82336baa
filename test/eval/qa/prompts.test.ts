import { describe, expect, it } from 'vitest';
import { retryAfterMs } from '../../../eval/qa/chat-client.js';
import { answerMessages, judgeMessages, memoriesWithin, parseVerdict } from '../../../eval/qa/prompts.js';

describe('QA prompts', () => {
  it('keeps memories in rank order within top k and the word budget, the first always', () => {
    const contents = ['a b c', 'd e', 'f g h i', 'j'];
    const words = [3, 2, 4, 1];
    expect(memoriesWithin(contents, words, 10, 5)).toEqual(['a b c', 'd e']);
    expect(memoriesWithin(contents, words, 1, 100)).toEqual(['a b c']);
    expect(memoriesWithin(contents, words, 10, 1)).toEqual(['a b c']);
    expect(memoriesWithin([], [], 10, 100)).toEqual([]);
  });

  it('fills the templates once, so text inside a memory is never taken for a placeholder', () => {
    const [, user] = answerMessages('What is {gold}?', ['I said {question}\nand more'], '2023/05/30 (Tue) 10:00');
    expect(user.content).toContain('- I said {question} and more');
    expect(user.content).toContain('The question is asked on 2023/05/30 (Tue) 10:00.\nQuestion: What is {gold}?');
    expect(answerMessages('q', [])[1].content).toContain('Memories:\n(none)');
    expect(judgeMessages('q', 'violin', 'the violin')[1].content).toBe('Question: q\nGold answer: violin\nGenerated answer: the violin\nGrade:');
  });

  it("takes the judge's last CORRECT or WRONG, whatever the case, and nothing from other words", () => {
    expect(parseVerdict('CORRECT')).toBe('CORRECT');
    expect(parseVerdict('Not correct. Final: wrong')).toBe('WRONG');
    expect(parseVerdict('{"label": "CORRECT"}')).toBe('CORRECT');
    expect(parseVerdict('INCORRECTLY WRONGFUL')).toBeUndefined();
  });
});

describe('retryAfterMs', () => {
  it('reads seconds, fractions and HTTP dates, and nothing else', () => {
    expect(retryAfterMs('2')).toBe(2000);
    expect(retryAfterMs('0.25')).toBe(250);
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterMs('Thu, 01 Jan 2026 00:00:05 GMT', now)).toBe(5000);
    expect(retryAfterMs('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs(null)).toBeUndefined();
    expect(retryAfterMs('soon')).toBeUndefined();
  });
});
