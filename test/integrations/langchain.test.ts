import { AIMessage, HumanMessage, SystemMessage } from '@langchain/core/messages';
import { BaseRetriever } from '@langchain/core/retrievers';
import { beforeAll, describe, expect, it } from 'vitest';
// Through the package's own exports (dist/), as an application imports them.
import { MemoryPoolClient } from 'memorypool/client';
import { MemoryPoolChatMessageHistory, MemoryPoolRetriever } from 'memorypool/langchain';
import { startServerProcess } from '../support/server-process.js';
import { tempDir } from '../support/helper.js';
import { assertBuilt } from '../support/compiled.js';

describe('memorypool/langchain against a real server', () => {
  beforeAll(assertBuilt);

  it('retrieves memories as Documents: text, and id, score, tags, metadata and time in metadata', async () => {
    const server = await startServerProcess({ dataDir: await tempDir() });
    const client = new MemoryPoolClient({ url: server.url, token: '' });
    const dog = await client.remember({ text: 'Caroline adopted a rescue dog named Max', tags: ['pets'], user_id: 'caroline' });
    await client.remember({ text: 'Caroline works as a counsellor', user_id: 'caroline' });
    await client.remember({ text: 'Melanie has a cat', user_id: 'melanie' });

    const retriever = new MemoryPoolRetriever({ client, userId: 'caroline', limit: 1 });
    expect(retriever).toBeInstanceOf(BaseRetriever);
    const documents = await retriever.invoke('What is the dog called?');
    expect(documents).toHaveLength(1);
    expect(documents[0].pageContent).toBe(dog.text);
    expect(documents[0].id).toBe(dog.id);
    expect(documents[0].metadata).toMatchObject({ id: dog.id, tags: ['pets'], metadata: {}, time: dog.created_at, user_id: 'caroline', source: 'cli' });
    expect(typeof documents[0].metadata.score).toBe('number');

    const tagged = await new MemoryPoolRetriever({ client, userId: 'caroline', tag: 'pets' }).invoke('Caroline');
    expect(tagged.map((document) => document.id)).toEqual([dog.id]);
  });

  it('keeps a chat history through /add and loads it back in order, per session', async () => {
    const server = await startServerProcess({ dataDir: await tempDir() });
    const client = new MemoryPoolClient({ url: server.url, token: '' });
    const history = new MemoryPoolChatMessageHistory({ client, userId: 'caroline', sessionId: 'chat-1' });
    await history.addMessages([new SystemMessage('You are a helpful assistant.'), new HumanMessage('My dog is called Max.')]);
    await history.addMessage(new AIMessage('Max is a lovely name.'));
    await history.addUserMessage('And my cat is Luna.');
    await new MemoryPoolChatMessageHistory({ client, userId: 'caroline', sessionId: 'chat-2' }).addUserMessage('Another conversation');
    // A turn longer than the encoder's window is stored in parts and read back whole.
    const long = Array.from({ length: 30 }, (_, index) => `Sentence number ${index} is about the garden.`).join(' ');
    await history.addUserMessage(long);

    const messages = await history.getMessages();
    expect(messages.map((message) => [message.getType(), message.text])).toEqual([
      ['system', 'You are a helpful assistant.'],
      ['human', 'My dog is called Max.'],
      ['ai', 'Max is a lovely name.'],
      ['human', 'And my cat is Luna.'],
      ['human', long],
    ]);
    // The turns are memories of the user too: searchable with the platform's Search.
    const found = await client.search({ query: 'What is the dog called?', user_id: 'caroline', top_k: 3 });
    expect(found.data.some((hit) => hit.content.endsWith('user: My dog is called Max.'))).toBe(true);

    await history.clear();
    expect(await history.getMessages()).toEqual([]);
    expect((await new MemoryPoolChatMessageHistory({ client, userId: 'caroline', sessionId: 'chat-2' }).getMessages()).map((message) => message.text)).toEqual(['Another conversation']);
  });
});
