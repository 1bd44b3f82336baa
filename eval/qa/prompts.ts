import type { ChatMessage } from './chat-client.js';

/**
 * The two prompts of the QA score, written for this harness in the spirit of the mem0 paper's
 * LoCoMo evaluation: an answer model reads the retrieved memories and answers briefly; a judge
 * compares that answer with the gold one and says CORRECT or WRONG, generous about wording and
 * date formats, strict about the fact. The report prints both, so a figure can be read against them.
 */

export const ANSWER_SYSTEM = [
  'You answer questions about a person from memories of their past conversations.',
  'Use only the memories given. Each memory is one message, with its date and speaker when known.',
  'When memories disagree, the most recent one wins. Turn relative dates ("last week", "yesterday") into dates using the date of the memory that says them.',
  'Answer with a short phrase or one sentence: the fact asked for, not an explanation.',
  'If the memories do not hold the answer, say that you do not know.',
].join('\n');

export const ANSWER_USER = 'Memories:\n{memories}\n\n{asked}Question: {question}\nAnswer:';

export const JUDGE_SYSTEM = [
  'You grade answers to questions about a person\'s past conversations.',
  'You are given the question, the gold answer and a generated answer.',
  'Say CORRECT when the generated answer states the fact the gold answer states, whatever its wording or length, and does not contradict it. A date, time or period is correct when it names the same one as the gold answer in any format.',
  'Say WRONG when it misses that fact, contradicts it, names another person, thing or date, or says it does not know while the gold answer gives one.',
  'Reply with one word: CORRECT or WRONG.',
].join('\n');

export const JUDGE_USER = 'Question: {question}\nGold answer: {gold}\nGenerated answer: {answer}\nGrade:';

/** The memories an answer model reads: in rank order, while they fit the word budget (the first always). */
export function memoriesWithin(contents: readonly string[], words: readonly number[], topK: number, wordBudget: number): string[] {
  const chosen: string[] = [];
  let used = 0;
  for (let i = 0; i < Math.min(topK, contents.length); i++) {
    if (chosen.length > 0 && used + words[i] > wordBudget) break;
    chosen.push(contents[i]);
    used += words[i];
  }
  return chosen;
}

export function answerMessages(question: string, memories: readonly string[], askedAt?: string): ChatMessage[] {
  const list = memories.length === 0 ? '(none)' : memories.map((memory) => `- ${memory.replace(/\s*\n\s*/g, ' ')}`).join('\n');
  return [
    { role: 'system', content: ANSWER_SYSTEM },
    { role: 'user', content: fill(ANSWER_USER, { memories: list, asked: askedAt ? `The question is asked on ${askedAt}.\n` : '', question }) },
  ];
}

export function judgeMessages(question: string, gold: string, answer: string): ChatMessage[] {
  return [
    { role: 'system', content: JUDGE_SYSTEM },
    { role: 'user', content: fill(JUDGE_USER, { question, gold, answer }) },
  ];
}

/** The judge's last CORRECT or WRONG; undefined when it said neither (counted as wrong, and reported). */
export function parseVerdict(text: string): 'CORRECT' | 'WRONG' | undefined {
  const words = text.toUpperCase().match(/\b(CORRECT|WRONG)\b/g);
  return words === null ? undefined : (words[words.length - 1] as 'CORRECT' | 'WRONG');
}

function fill(template: string, values: Record<string, string>): string {
  // One pass, so a memory holding "{question}" is not filled in turn.
  return template.replace(/\{(\w+)\}/g, (whole, name: string) => values[name] ?? whole);
}
