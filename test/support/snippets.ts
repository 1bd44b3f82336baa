import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'vitest';
import { projectRoot } from './server-process.js';

/**
 * The code blocks of the README and docs/ that a reader copies into an application (each fenced
 * block after a `<!-- snippet: name -->` marker), and what each prints: run against the repository
 * by test/docs/snippets.test.ts and against the installed package by test/install/fresh-app.test.ts.
 */

/** Every file whose code blocks a reader may copy. */
export async function documents(): Promise<Array<{ file: string; text: string }>> {
  const docs = (await readdir(path.join(projectRoot, 'docs'))).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`);
  return Promise.all(['README.md', 'CONTRIBUTING.md', ...docs].map(async (file) => ({ file, text: await readFile(path.join(projectRoot, file), 'utf8') })));
}

const MARKED = /<!-- snippet: ([\w-]+) -->\n```\w+\n([\s\S]*?)```\n/g;

export async function snippet(name: string): Promise<string> {
  const found = (await documents()).flatMap(({ text }) => [...text.matchAll(MARKED)].filter((match) => match[1] === name).map((match) => match[2]));
  if (found.length !== 1) throw new Error(`README.md and docs/ hold ${found.length} snippets named "${name}", not one`);
  return found[0];
}

/** Stands in for a real model in the AI SDK snippet: remembers, recalls, corrects, then forgets. */
export const SCRIPTED_MODEL = `
import { MockLanguageModelV3 } from 'ai/test';
const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
const call = (toolName, input) => ({ content: [{ type: 'tool-call', toolCallId: toolName, toolName, input: JSON.stringify(input) }], finishReason: { unified: 'tool-calls', raw: undefined }, usage, warnings: [] });
export const model = new MockLanguageModelV3({
  doGenerate: async ({ prompt }) => {
    const results = prompt.filter((message) => message.role === 'tool').flatMap((message) => message.content);
    const stored = results.find((result) => result.toolName === 'remember')?.output.value;
    if (results.length === 0) return call('remember', { text: 'Caroline adopted a rescue dog named Max', tags: ['pets'] });
    if (results.length === 1) return call('recall', { query: 'dog', limit: 1 });
    if (results.length === 2) return call('update', { id: stored.id, text: 'Caroline adopted a rescue beagle named Max' });
    if (results.length === 3) return call('forget', { id: stored.id });
    return { content: [{ type: 'text', text: 'Done.' }], finishReason: { unified: 'stop', raw: undefined }, usage, warnings: [] };
  },
});
`;

/** What the JavaScript snippets print, as each snippet's test checks it. */
export function expectSnippetOutput(name: 'client-ts' | 'client-python' | 'in-process' | 'langchain' | 'ai-sdk', lines: string[]): void {
  if (name === 'langchain') {
    expect(lines).toEqual([expect.stringMatching(/^I adopted a rescue dog named Max\. \d/), "[ 'I adopted a rescue beagle named Max.' ]"]);
  } else if (name === 'ai-sdk') {
    expect(lines.map((line) => line.split(' ')[0])).toEqual(['remember', 'recall', 'update', 'forget']);
    expect(JSON.parse(lines[2].slice('update '.length))).toMatchObject({ text: 'Caroline adopted a rescue beagle named Max', user_id: 'caroline' });
  } else {
    expect(lines).toEqual([expect.stringMatching(/^Caroline adopted a rescue dog named Max \d/), 'Caroline adopted a rescue beagle named Max']);
  }
}
