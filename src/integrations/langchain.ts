import { BaseListChatMessageHistory } from '@langchain/core/chat_history';
import { Document } from '@langchain/core/documents';
import { AIMessage, ChatMessage, HumanMessage, SystemMessage, type BaseMessage } from '@langchain/core/messages';
import { BaseRetriever, type BaseRetrieverInput } from '@langchain/core/retrievers';
import type { Memory, MemoryMetadata, MemoryPoolApi, RecallParams } from 'memorypool-client';

/**
 * memorypool in LangChain.js (`memorypool/langchain`, `@langchain/core` 1.x as an optional peer):
 * a retriever over a user's memories and a chat message history kept through the platform's
 * `/add`. Either takes the HTTP client (`memorypool/client`) or the in-process pool (`memorypool`).
 */

/** What a retrieved Document carries besides the memory's text. */
export interface MemoryDocumentMetadata {
  id: string;
  score: number;
  tags: string[];
  metadata: MemoryMetadata;
  /** When the memory happened: the message's time for a conversation turn, else when it was stored (ISO 8601). */
  time: string;
  created_at: string;
  user_id: string;
  source: string;
  session_id?: string;
  role?: string;
}

export interface MemoryPoolRetrieverInput extends BaseRetrieverInput {
  client: MemoryPoolApi;
  /** Whose memories (default "default"). */
  userId?: string;
  /** How many documents (default the server's 10). */
  limit?: number;
  /** Only memories with this tag; `filter`: metadata that must match; `since`/`until`: a time range (ISO 8601 or Unix ms). */
  tag?: RecallParams['tag'];
  filter?: RecallParams['filter'];
  since?: RecallParams['since'];
  until?: RecallParams['until'];
}

/** A `BaseRetriever` whose documents are the user's memories ranked for the query (`recall`). */
export class MemoryPoolRetriever extends BaseRetriever<MemoryDocumentMetadata> {
  lc_namespace = ['memorypool', 'retrievers'];
  private readonly client: MemoryPoolApi;
  private readonly recallParams: Omit<RecallParams, 'query'>;

  static lc_name(): string {
    return 'MemoryPoolRetriever';
  }

  constructor(fields: MemoryPoolRetrieverInput) {
    super(fields);
    this.client = fields.client;
    this.recallParams = { user_id: fields.userId, limit: fields.limit, tag: fields.tag, filter: fields.filter, since: fields.since, until: fields.until };
  }

  async _getRelevantDocuments(query: string): Promise<Document<MemoryDocumentMetadata>[]> {
    const hits = await this.client.recall({ ...this.recallParams, query });
    return hits.map(
      (hit) =>
        new Document<MemoryDocumentMetadata>({
          id: hit.id,
          pageContent: hit.text,
          metadata: {
            id: hit.id,
            score: hit.score,
            tags: hit.tags,
            metadata: hit.metadata,
            time: hit.occurred_at ?? hit.created_at,
            created_at: hit.created_at,
            user_id: hit.user_id,
            source: hit.source,
            ...(hit.session_id === undefined ? {} : { session_id: hit.session_id }),
            ...(hit.role === undefined ? {} : { role: hit.role }),
          },
        }),
    );
  }
}

export interface MemoryPoolChatMessageHistoryInput {
  client: MemoryPoolApi;
  userId: string;
  sessionId: string;
}

/** How many of the user's newest memories a history reads back (the list door's cap). */
const HISTORY_WINDOW = 1000;

/**
 * A chat history kept in memorypool: each `addMessages` is one platform Add (`/add`, with the
 * session id and each message's role and time), so the turns are also searchable memories of the
 * user. No door lists one session in order, so `getMessages` reads the user's newest 1,000
 * memories (`/mem/list`, newest first), keeps this session's and reverses them: the server stores
 * a user's Adds in the order it received them. Messages with no text (a tool-call-only AI turn)
 * are not stored: the Add contract needs non-blank content.
 */
export class MemoryPoolChatMessageHistory extends BaseListChatMessageHistory {
  lc_namespace = ['memorypool', 'chat_history'];
  private readonly client: MemoryPoolApi;
  private readonly userId: string;
  private readonly sessionId: string;

  constructor(fields: MemoryPoolChatMessageHistoryInput) {
    super(fields);
    this.client = fields.client;
    this.userId = fields.userId;
    this.sessionId = fields.sessionId;
  }

  async getMessages(): Promise<BaseMessage[]> {
    return joinParts(await this.sessionMemories()).map(toMessage);
  }

  async addMessage(message: BaseMessage): Promise<void> {
    await this.addMessages([message]);
  }

  async addMessages(messages: BaseMessage[]): Promise<void> {
    const now = Date.now();
    const turns = messages.filter((message) => message.text.trim() !== '').map((message) => ({ role: roleOf(message), content: message.text, timestamp: now }));
    if (turns.length === 0) return;
    await this.client.add({ user_id: this.userId, session_id: this.sessionId, messages: turns });
  }

  /** Forgets this session's turns (the user's other memories stay). */
  async clear(): Promise<void> {
    for (const memory of await this.sessionMemories()) await this.client.forget(memory.id, { user_id: this.userId });
  }

  private async sessionMemories(): Promise<Memory[]> {
    const newestFirst = await this.client.list({ user_id: this.userId, limit: HISTORY_WINDOW });
    return newestFirst.filter((memory) => memory.session_id === this.sessionId).reverse();
  }
}

/** A message longer than the encoder's window was stored as several parts: one message again. */
function joinParts(memories: Memory[]): Memory[] {
  const out: Memory[] = [];
  for (const memory of memories) {
    const previous = out[out.length - 1];
    const continues = previous !== undefined && (memory.part ?? 0) > 0 && previous.request_id === memory.request_id && previous.message_index === memory.message_index;
    if (continues) out[out.length - 1] = { ...previous, text: `${previous.text} ${memory.text}` };
    else out.push(memory);
  }
  return out;
}

const ROLES: Record<string, string> = { human: 'user', ai: 'assistant', system: 'system' };

function roleOf(message: BaseMessage): string {
  if (ChatMessage.isInstance(message)) return message.role;
  return ROLES[message.getType()] ?? message.getType();
}

function toMessage(memory: Memory): BaseMessage {
  const fields = { content: memory.text, id: memory.id };
  if (memory.role === 'user') return new HumanMessage(fields);
  if (memory.role === 'assistant') return new AIMessage(fields);
  if (memory.role === 'system') return new SystemMessage(fields);
  return new ChatMessage({ ...fields, role: memory.role ?? 'user' });
}
