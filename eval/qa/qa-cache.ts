import { createHash } from 'node:crypto';
import { appendFile, readFile } from 'node:fs/promises';
import type { ChatMessage, ChatReply } from './chat-client.js';

/**
 * Replies kept by a hash of everything that shaped them (model and messages), one JSON line each,
 * appended as they arrive: an interrupted run resumes where it stopped and a rerun with the same
 * retrieval and prompts calls nothing. A changed memory, prompt or model is a new key.
 */
export class ReplyCache {
  private constructor(
    private readonly path: string,
    private readonly replies: Map<string, ChatReply>,
  ) {}

  static async open(path: string): Promise<ReplyCache> {
    const replies = new Map<string, ChatReply>();
    let text = '';
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      try {
        const entry = JSON.parse(line) as { key: string; reply: ChatReply };
        replies.set(entry.key, entry.reply);
      } catch {
        // A line cut short by an interruption is only a reply to ask for again.
      }
    }
    // Start the next append on a line of its own after a cut-short last line.
    if (text !== '' && !text.endsWith('\n')) await appendFile(path, '\n');
    return new ReplyCache(path, replies);
  }

  static key(model: string, messages: readonly ChatMessage[]): string {
    return createHash('sha256').update(JSON.stringify({ model, temperature: 0, messages })).digest('hex');
  }

  get(key: string): ChatReply | undefined {
    return this.replies.get(key);
  }

  async put(key: string, reply: ChatReply): Promise<void> {
    this.replies.set(key, reply);
    await appendFile(this.path, `${JSON.stringify({ key, reply })}\n`);
  }
}
