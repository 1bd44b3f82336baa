import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'vitest';

export const TOOL_NAMES = ['remember', 'recall', 'list_memories', 'get_memory', 'forget', 'memory_stats'];

/** The JSON a tool answered with (its one text block); fails the test on a tool error. */
export async function callJson(client: Client, name: string, args: Record<string, unknown>): Promise<any> {
  const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ type: string; text: string }> };
  expect(result.isError ?? false, result.content[0]?.text).toBe(false);
  return JSON.parse(result.content[0].text);
}

/** The message of a tool error; fails the test when the call succeeded. */
export async function callError(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const result = (await client.callTool({ name, arguments: args })) as { isError?: boolean; content: Array<{ type: string; text: string }> };
  expect(result.isError).toBe(true);
  return result.content[0].text;
}

/** Lists the tools and calls each one, through whichever transport the client is connected over. */
export async function exerciseEveryTool(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  expect(tools.map((tool) => tool.name)).toEqual(TOOL_NAMES);
  for (const tool of tools) {
    expect(tool.description!.length).toBeGreaterThan(20);
    expect(tool.inputSchema.type).toBe('object');
  }
  const recall = tools.find((tool) => tool.name === 'recall')!;
  expect(recall.inputSchema.required).toEqual(['query']);
  expect(Object.keys(recall.inputSchema.properties ?? {})).toEqual(['query', 'tag', 'limit', 'explain', 'user_id']);

  const dog = await callJson(client, 'remember', { text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.8, user_id: 'caroline' });
  expect(dog).toMatchObject({ text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], importance: 0.8, source: 'mcp', user_id: 'caroline' });
  await callJson(client, 'remember', { text: 'Caroline works as a counsellor at a youth centre', user_id: 'caroline' });

  const hits = await callJson(client, 'recall', { query: 'dog named Max', user_id: 'caroline', limit: 5 });
  expect(hits[0]).toMatchObject({ id: dog.id, text: dog.text });
  // The standalone content says when: the model can quote it without the rest of the record.
  expect(hits[0].content).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d\] Caroline adopted a rescue dog named Max$/);
  expect(typeof hits[0].score).toBe('number');
  expect(hits[0]).not.toHaveProperty('explanation');
  expect(await callJson(client, 'recall', { query: 'dog', tag: 'pets', user_id: 'caroline' })).toHaveLength(1);
  const [explained] = await callJson(client, 'recall', { query: 'dog named Max', user_id: 'caroline', limit: 1, explain: true });
  expect(explained.explanation.score).toBeCloseTo(explained.score, 5);
  expect(explained.explanation.terms.map((term: { term: string }) => term.term)).toContain('dense');

  const listed = await callJson(client, 'list_memories', { user_id: 'caroline' });
  expect(listed.map((memory: { text: string }) => memory.text)).toEqual(['Caroline works as a counsellor at a youth centre', dog.text]);
  expect(await callJson(client, 'get_memory', { id: dog.id, user_id: 'caroline' })).toEqual(dog);
  expect(await callJson(client, 'memory_stats', { user_id: 'caroline' })).toMatchObject({ count: 2, users: 1 });
  expect(await callJson(client, 'forget', { id: dog.id, user_id: 'caroline' })).toEqual({ deleted: dog.id });
  expect(await callError(client, 'get_memory', { id: dog.id, user_id: 'caroline' })).toBe(`No memory with id ${JSON.stringify(dog.id)}`);
}

/** Bad arguments come back as tool errors carrying the HTTP API's messages. */
export async function exerciseBadArguments(client: Client): Promise<void> {
  expect(await callError(client, 'remember', {})).toBe('text: is required');
  expect(await callError(client, 'remember', { text: 'x', importance: 2 })).toBe('importance: importance must be between 0 and 1');
  expect(await callError(client, 'recall', { query: '  ' })).toBe('query: must be a non-empty string');
  expect(await callError(client, 'recall', { query: 'x', limit: 0 })).toBe('limit: limit must be a positive integer');
  expect(await callError(client, 'forget', {})).toBe('id: is required');
  expect(await callError(client, 'no_such_tool', {})).toMatch(/Unknown tool "no_such_tool"/);
}
