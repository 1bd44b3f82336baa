import { asSchema } from 'ai';
import { beforeAll, describe, expect, it } from 'vitest';
// Through the package's own exports (dist/), as an application imports them.
import { MemoryPoolClient, NotFoundError } from 'memorypool/client';
import { memoryTools } from 'memorypool/ai';
import { startServerProcess } from '../support/server-process.js';
import { tempDir } from '../support/helper.js';
import { assertBuilt } from '../support/compiled.js';

const options = (toolCallId: string) => ({ toolCallId, messages: [], abortSignal: new AbortController().signal });

describe('memorypool/ai: the AI SDK tools', () => {
  beforeAll(assertBuilt);

  it('offers the model remember, recall, update and forget, with JSON Schemas from the server schemas', async () => {
    const tools = memoryTools({ client: new MemoryPoolClient({ url: 'http://127.0.0.1:1' }), userId: 'u' });
    expect(Object.keys(tools)).toEqual(['remember', 'recall', 'update', 'forget']);
    const schemas = Object.fromEntries(await Promise.all(Object.entries(tools).map(async ([name, tool]) => [name, await asSchema(tool.inputSchema).jsonSchema] as const)));
    expect(schemas.remember).toMatchObject({
      type: 'object',
      required: ['text'],
      properties: {
        text: { type: 'string', maxLength: 200000, description: 'What to remember, one self-contained statement' },
        tags: { type: 'array', items: { type: 'string' } },
        importance: { type: 'number', minimum: 0, maximum: 1 },
        metadata: { type: 'object' },
      },
    });
    expect(schemas.recall).toMatchObject({ type: 'object', required: ['query'], properties: { query: { type: 'string' }, limit: { type: 'integer', maximum: 1000 }, tag: { type: 'string' } } });
    expect(schemas.update).toMatchObject({ type: 'object', required: ['id'] });
    expect(Object.keys((schemas.update as { properties: object }).properties).sort()).toEqual(['id', 'importance', 'metadata', 'tags', 'text']);
    expect(schemas.forget).toMatchObject({ type: 'object', required: ['id'], properties: { id: { type: 'string' } } });
    for (const [name, schema] of Object.entries(schemas)) expect(JSON.stringify(schema), name).not.toContain('user_id');
    for (const tool of Object.values(tools)) expect(tool.description!.length).toBeGreaterThan(30);
  });

  it("runs remember, recall and forget against a real server, as the user it was given", async () => {
    const server = await startServerProcess({ dataDir: await tempDir() });
    const client = new MemoryPoolClient({ url: server.url, token: '' });
    const tools = memoryTools({ client, userId: 'caroline' });
    const stored = await tools.remember.execute!({ text: 'Caroline adopted a rescue dog named Max', tags: ['pets'] }, options('1'));
    expect(stored).toMatchObject({ user_id: 'caroline', text: 'Caroline adopted a rescue dog named Max', tags: ['pets'] });
    const hits = await tools.recall.execute!({ query: 'dog name', limit: 3 }, options('2'));
    expect(hits.map((hit) => hit.id)).toEqual([stored.id]);
    expect(await client.list({ user_id: 'default' })).toEqual([]);
    expect(await tools.forget.execute!({ id: stored.id }, options('3'))).toEqual({ deleted: stored.id });
    await expect(tools.forget.execute!({ id: stored.id }, options('4'))).rejects.toBeInstanceOf(NotFoundError);
  });
});
