import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect } from 'vitest';

export const TOOL_NAMES = ['remember', 'recall', 'list_memories', 'list_page', 'get_memory', 'update_memory', 'forget', 'forget_matching', 'write_memories', 'memory_stats', 'list_entities', 'list_changes'];

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
  expect(Object.keys(recall.inputSchema.properties ?? {})).toEqual(['query', 'tag', 'agent_id', 'run_id', 'where', 'filter', 'since', 'until', 'entity', 'limit', 'explain', 'rerank', 'user_id', 'user_ids']);
  expect(tools.find((tool) => tool.name === 'update_memory')!.inputSchema.required).toEqual(['id']);

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

  // Metadata, filters, updates and history.
  const job = await callJson(client, 'remember', { text: 'Caroline works at the youth centre on Mondays', metadata: { topic: 'work', days: 1 }, user_id: 'caroline' });
  expect(job.metadata).toEqual({ topic: 'work', days: 1 });
  expect((await callJson(client, 'recall', { query: 'Caroline', filter: { topic: 'work' }, user_id: 'caroline' })).map((hit: { id: string }) => hit.id)).toEqual([job.id]);
  expect(await callJson(client, 'recall', { query: 'Caroline', filter: { topic: 'work' }, since: Date.parse(job.created_at) + 60_000, user_id: 'caroline' })).toEqual([]);
  expect((await callJson(client, 'list_memories', { filter: { days: 1 }, until: new Date(Date.now() + 60_000).toISOString(), user_id: 'caroline' })).map((memory: { id: string }) => memory.id)).toEqual([job.id]);
  const moved = await callJson(client, 'update_memory', { id: job.id, text: 'Caroline now works at the library', metadata: { topic: 'work', days: 2 }, user_id: 'caroline' });
  expect(moved).toMatchObject({ id: job.id, version: 2, text: 'Caroline now works at the library', metadata: { topic: 'work', days: 2 } });
  const withHistory = await callJson(client, 'get_memory', { id: job.id, history: true, user_id: 'caroline' });
  expect(withHistory.versions.map((version: { version: number; text: string }) => [version.version, version.text])).toEqual([[1, job.text], [2, moved.text]]);
  expect((await callJson(client, 'recall', { query: 'library', user_id: 'caroline', limit: 1 }))[0].id).toBe(job.id);
  expect(await callJson(client, 'forget', { id: job.id, user_id: 'caroline' })).toEqual({ deleted: job.id });

  // Scopes, a where expression and pages.
  const scoped = await callJson(client, 'remember', { text: 'Caroline prefers morning calls', agent_id: 'scheduler', run_id: 'week-1', user_id: 'caroline' });
  expect(scoped).toMatchObject({ agent_id: 'scheduler', run_id: 'week-1' });
  expect((await callJson(client, 'recall', { query: 'calls', where: { $or: [{ agent_id: 'scheduler' }, { importance: { $gt: 0.9 } }] }, user_id: 'caroline' })).map((hit: { id: string }) => hit.id)).toEqual([scoped.id]);
  expect(await callError(client, 'recall', { query: 'calls', where: { $or: [{ agent_id: 1 }] }, user_id: 'caroline' })).toBe('where.$or[0].agent_id: must be a string');
  const page = await callJson(client, 'list_page', { limit: 1, user_id: 'caroline' });
  expect(page.memories.map((memory: { id: string }) => memory.id)).toEqual([scoped.id]);
  const rest = await callJson(client, 'list_page', { limit: 5, cursor: page.next_cursor, user_id: 'caroline' });
  expect(rest.next_cursor).toBeNull();
  expect(rest.memories.map((memory: { text: string }) => memory.text)).toEqual(['Caroline works as a counsellor at a youth centre', dog.text]);
  expect(await callJson(client, 'forget_matching', { where: { agent_id: 'scheduler' }, dry_run: true, user_id: 'caroline' })).toEqual({ deleted: 1, dry_run: true });
  expect(await callError(client, 'forget_matching', { where: {}, user_id: 'caroline' })).toBe('where: must hold at least one condition');
  expect(await callJson(client, 'forget_matching', { where: { agent_id: 'scheduler' }, user_id: 'caroline' })).toEqual({ deleted: 1, dry_run: false });

  const batch = await callJson(client, 'write_memories', {
    user_id: 'caroline',
    operations: [{ op: 'add', text: 'Caroline plays the violin', tags: ['music'] }, { op: 'update', id: 'nope', text: 'x' }, { op: 'add' }],
  });
  expect(batch.results.map((result: { status: number }) => result.status)).toEqual([201, 404, 400]);
  expect(batch.results[2].error).toBe('operations[2].text: is required');
  expect(await callJson(client, 'write_memories', { user_id: 'caroline', operations: [{ op: 'delete', id: batch.results[0].memory.id }] })).toEqual({ results: [{ status: 200, deleted: batch.results[0].memory.id }] });

  const listed = await callJson(client, 'list_memories', { user_id: 'caroline' });
  expect(listed.map((memory: { text: string }) => memory.text)).toEqual(['Caroline works as a counsellor at a youth centre', dog.text]);
  expect(await callJson(client, 'get_memory', { id: dog.id, user_id: 'caroline' })).toEqual(dog);
  expect(await callJson(client, 'memory_stats', { user_id: 'caroline' })).toMatchObject({ count: 2, users: 1 });
  expect(await callJson(client, 'list_entities', { user_id: 'caroline' })).toMatchObject({ entities: [{ entity: 'Caroline', kind: 'name', count: 2 }, { entity: 'Max', kind: 'name', count: 1 }] });
  expect((await callJson(client, 'list_memories', { entity: 'max', user_id: 'caroline' })).map((memory: { id: string }) => memory.id)).toEqual([dog.id]);
  // The feed, from its start: every write above, in order, the last one this user's.
  const changes = await callJson(client, 'list_changes', { user_id: 'caroline', limit: 1000 });
  const seqs = changes.events.map((event: { seq: number }) => event.seq);
  expect(seqs).toEqual([...seqs].sort((a: number, b: number) => a - b));
  expect(changes.events.at(-1)).toMatchObject({ type: 'deleted', user_id: 'caroline', memory_id: batch.results[0].memory.id, memory: null });
  expect(changes.events.some((event: { type: string; memory: { id: string } | null }) => event.type === 'added' && event.memory?.id === dog.id)).toBe(true);
  expect(await callJson(client, 'list_changes', { user_id: 'caroline', after: changes.next_cursor })).toEqual({ events: [], next_cursor: changes.next_cursor });
  expect(await callJson(client, 'forget', { id: dog.id, user_id: 'caroline' })).toEqual({ deleted: dog.id });
  const after = await callJson(client, 'list_changes', { user_id: 'caroline', after: changes.next_cursor, wait: 1 });
  expect(after.events).toMatchObject([{ type: 'deleted', memory_id: dog.id }]);
  expect(await callError(client, 'get_memory', { id: dog.id, user_id: 'caroline' })).toBe(`No memory with id ${JSON.stringify(dog.id)}`);
}

/** Bad arguments come back as tool errors carrying the HTTP API's messages. */
export async function exerciseBadArguments(client: Client): Promise<void> {
  expect(await callError(client, 'remember', {})).toBe('text: is required');
  expect(await callError(client, 'remember', { text: 'x', importance: 2 })).toBe('importance: importance must be between 0 and 1');
  expect(await callError(client, 'recall', { query: '  ' })).toBe('query: must be a non-empty string');
  expect(await callError(client, 'recall', { query: 'x', limit: 0 })).toBe('limit: limit must be a positive integer');
  expect(await callError(client, 'forget', {})).toBe('id: is required');
  expect(await callError(client, 'list_changes', { wait: 61 })).toBe('wait: wait must be at most 60');
  expect(await callError(client, 'update_memory', { id: 'x' })).toBe('body: give at least one of text, tags, importance, metadata, agent_id, run_id, expires_at, ttl_seconds');
  expect(await callError(client, 'update_memory', { id: 'missing', text: 'x' })).toBe('No memory with id "missing"');
  expect(await callError(client, 'remember', { text: 'x', metadata: { bad: null } })).toBe('metadata.bad: metadata values must be strings (at most 1000 characters), finite numbers or booleans');
  expect(await callError(client, 'recall', { query: 'x', since: 'last week' })).toBe('since: since must be an ISO 8601 date or Unix milliseconds');
  expect(await callError(client, 'no_such_tool', {})).toMatch(/Unknown tool "no_such_tool"/);
}
