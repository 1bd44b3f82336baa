/**
 * A client for an OpenAI-compatible `POST <base>/chat/completions`, as the QA score calls it:
 * temperature 0, the reply's text and its `usage` when the server reports one. A 429 waits as
 * long as its `retry-after` says; a 5xx, a network error or a timeout is retried with exponential
 * backoff; any other status fails at once (a wrong model name or key will not get better).
 */

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
  totalTokens: number;
}

export interface ChatReply {
  text: string;
  /** Absent when the server reports no `usage`. */
  usage?: TokenUsage;
}

export interface ChatClientOptions {
  /** The OpenAI-compatible base, e.g. http://host/v1. */
  baseUrl: string;
  apiKey?: string;
  /** Per attempt; default 120 s. */
  timeoutMs?: number;
  /** Attempts after the first; default 6. */
  retries?: number;
  /** First backoff after a 5xx or timeout, doubled each time; default 1 s. */
  backoffMs?: number;
  /** Longest wait a retry-after may ask for; default 120 s. */
  maxWaitMs?: number;
}

export class ChatError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
    this.name = 'ChatError';
  }
}

export class ChatClient {
  private readonly url: URL;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly backoffMs: number;
  private readonly maxWaitMs: number;

  constructor(private readonly options: ChatClientOptions) {
    this.url = new URL('chat/completions', options.baseUrl.endsWith('/') ? options.baseUrl : `${options.baseUrl}/`);
    this.timeoutMs = options.timeoutMs ?? 120_000;
    this.retries = options.retries ?? 6;
    this.backoffMs = options.backoffMs ?? 1000;
    this.maxWaitMs = options.maxWaitMs ?? 120_000;
  }

  async complete(model: string, messages: readonly ChatMessage[]): Promise<ChatReply> {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
    const body = JSON.stringify({ model, messages, temperature: 0 });
    let lastError: ChatError = new ChatError('no attempt made');
    // The wait the previous failure asked for, taken only when another attempt follows.
    let wait = 0;
    for (let attempt = 0; attempt <= this.retries; attempt++) {
      if (attempt > 0) await sleep(wait);
      let response: Response;
      try {
        response = await fetch(this.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(this.timeoutMs) });
      } catch (error) {
        lastError = new ChatError(`POST ${this.url.pathname}: ${error instanceof Error ? error.message : String(error)}`);
        wait = this.backoff(attempt);
        continue;
      }
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        // The timeout can also fire while the body is streaming in.
        lastError = new ChatError(`POST ${this.url.pathname}: ${error instanceof Error ? error.message : String(error)}`);
        wait = this.backoff(attempt);
        continue;
      }
      if (response.ok) return parseReply(text);
      lastError = new ChatError(`POST ${this.url.pathname} answered ${response.status}: ${text.slice(0, 300)}`, response.status);
      if (response.status === 429) wait = Math.min(this.maxWaitMs, retryAfterMs(response.headers.get('retry-after')) ?? this.backoff(attempt));
      else if (response.status >= 500) wait = this.backoff(attempt);
      else throw lastError;
    }
    throw lastError;
  }

  private backoff(attempt: number): number {
    return Math.min(this.maxWaitMs, this.backoffMs * 2 ** attempt);
  }
}

/** `retry-after` as seconds (fractions allowed) or an HTTP date, in milliseconds; undefined when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | undefined {
  if (header === null || header.trim() === '') return undefined;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const date = Date.parse(header);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

function parseReply(text: string): ChatReply {
  let body: { choices?: Array<{ message?: { content?: unknown } }>; usage?: { prompt_tokens?: unknown; completion_tokens?: unknown; total_tokens?: unknown } };
  try {
    body = JSON.parse(text);
  } catch {
    throw new ChatError(`chat/completions answered with something other than JSON: ${text.slice(0, 200)}`);
  }
  const content = body.choices?.[0]?.message?.content;
  if (typeof content !== 'string') throw new ChatError('chat/completions answered without choices[0].message.content');
  const reply: ChatReply = { text: content };
  const usage = body.usage;
  if (usage && typeof usage.prompt_tokens === 'number' && typeof usage.completion_tokens === 'number') {
    reply.usage = {
      promptTokens: usage.prompt_tokens,
      completionTokens: usage.completion_tokens,
      totalTokens: typeof usage.total_tokens === 'number' ? usage.total_tokens : usage.prompt_tokens + usage.completion_tokens,
    };
  }
  return reply;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
