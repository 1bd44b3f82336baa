import type { MemoryService } from '../src/memory/memory-service.js';
import type { ExportedUnit } from '../src/memory/portability.js';
import type { RetrievalWeights } from '../src/retrieval/retrieval-config.js';
import type { BenchQuestion, BenchUser } from './benchmark.js';
import { ContentMatcher, type MatchStats } from './content-matcher.js';
import { countWords, type Ranking } from './metrics.js';
import { TurnLocator, type PlannedAdd } from './replay-plan.js';

/** What an Add did, as far as the target can tell (a server only says it succeeded). */
export interface AddResult {
  /** False when the request id had been stored before (a reused data directory). */
  stored?: boolean;
  units?: number;
}

/** A search's answer as eval scores it: the turns of each returned item, and its content's words. */
export interface SearchAnswer {
  ranking: Ranking;
  /** Words of each returned item's content; absent when the contents are not known (peers). */
  words?: number[];
  /** Each returned item's content, as an answer model would read it (absent for peers). */
  contents?: string[];
}

/** Where a replay sends its Adds and Searches: the service in this process, or a server. */
export interface ReplayTarget {
  add(add: PlannedAdd): Promise<AddResult>;
  search(question: BenchQuestion, limit: number, weights?: Partial<RetrievalWeights>, collapseDuplicates?: boolean): Promise<SearchAnswer>;
}

/** The service in this process; hits map to turns through their provenance fields. */
export class ServiceTarget implements ReplayTarget {
  private readonly locator: TurnLocator;

  constructor(
    private readonly service: MemoryService,
    adds: readonly PlannedAdd[],
  ) {
    this.locator = new TurnLocator(adds);
  }

  async add(add: PlannedAdd): Promise<AddResult> {
    return this.service.addConversation({
      requestId: add.requestId,
      userId: add.userId,
      sessionId: add.sessionId,
      messages: add.messages,
    });
  }

  async search(question: BenchQuestion, limit: number, weights?: Partial<RetrievalWeights>, collapseDuplicates = true): Promise<SearchAnswer> {
    // Searched as the platform's /search door searches, so in-process figures match the HTTP ones.
    const hits = await this.service.search({ userId: question.userId, query: question.query, limit, profile: 'platform' }, { ...(weights ? { weights } : {}), collapseDuplicates });
    return { ranking: hits.map((hit) => this.turnsOf(question.userId, hit.memory)), words: hits.map((hit) => countWords(hit.content)), contents: hits.map((hit) => hit.content) };
  }

  /** Each exported unit with the turns it holds, for the peers. */
  async exportUnits(userId: string): Promise<Array<ExportedUnit & { turnIds: string[] }>> {
    const units = await this.service.exportUnits(userId);
    return units.map((unit) => ({ ...unit, turnIds: this.turnsOf(userId, unit.memory) }));
  }

  private turnsOf(userId: string, memory: { request_id?: string; message_index?: number }): string[] {
    const turnId = this.locator.locate(userId, memory.request_id, memory.message_index);
    return turnId === undefined ? [] : [turnId];
  }
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly path: string,
    body: string,
  ) {
    super(`POST ${path} answered ${status}: ${body.slice(0, 300)}`);
  }
}

interface HttpSearchHit {
  id: string;
  content: string;
  score: number;
  created_at?: string;
}

const RETRIES = 3;
const REQUEST_TIMEOUT_MS = 120_000;

/**
 * A running server, through the evaluation platform's Add/Search contract. Its hits carry no
 * provenance, so their `content` is matched back to the turns sent (see content-matcher.ts).
 * Requests are retried on network errors, 429 and 5xx: request ids make Adds idempotent.
 */
export class HttpTarget implements ReplayTarget {
  private readonly matchers = new Map<string, ContentMatcher>();

  constructor(
    private readonly baseUrl: string,
    private readonly token: string | undefined,
    users: readonly BenchUser[],
  ) {
    for (const user of users) this.matchers.set(user.userId, new ContentMatcher(user));
  }

  async add(add: PlannedAdd): Promise<AddResult> {
    await this.post('/add', {
      request_id: add.requestId,
      user_id: add.userId,
      session_id: add.sessionId,
      messages: add.messages.map((message) => ({ role: message.role, timestamp: message.timestamp ?? null, content: message.content })),
    });
    return {};
  }

  async search(question: BenchQuestion, limit: number): Promise<SearchAnswer> {
    const body = (await this.post('/search', { query: question.query, user_id: question.userId, top_k: limit })) as { data?: HttpSearchHit[] };
    if (!Array.isArray(body.data)) throw new Error(`POST /search: no data array in the answer`);
    const matcher = this.matchers.get(question.userId);
    const contents = body.data.map((hit) => String(hit.content ?? ''));
    return { ranking: contents.map((content) => (matcher ? matcher.match(content) : [])), words: contents.map(countWords), contents };
  }

  /** How hits were matched to turns, summed over users. */
  matchStats(): MatchStats {
    const total: MatchStats = { exact: 0, piece: 0, fuzzy: 0, unmatched: 0, ambiguous: 0 };
    for (const matcher of this.matchers.values()) {
      for (const key of Object.keys(total) as Array<keyof MatchStats>) total[key] += matcher.stats[key];
    }
    return total;
  }

  private async post(path: string, payload: unknown): Promise<unknown> {
    const url = new URL(path.replace(/^\//, ''), this.baseUrl.endsWith('/') ? this.baseUrl : `${this.baseUrl}/`);
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let lastError: unknown;
    for (let attempt = 0; attempt < RETRIES; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 500 * 2 ** attempt));
      let response: Response;
      try {
        response = await fetch(url, { method: 'POST', headers, body: JSON.stringify(payload), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
      } catch (error) {
        lastError = error;
        continue;
      }
      const text = await response.text();
      if (response.ok) return text === '' ? {} : JSON.parse(text);
      lastError = new HttpError(response.status, path, text);
      if (response.status !== 429 && response.status < 500) break;
    }
    throw lastError;
  }
}
