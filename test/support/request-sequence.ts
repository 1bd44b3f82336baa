/**
 * A seeded sequence of requests over every door (the platform's /add and /search, /mem*, /invoke,
 * MCP at /mcp): valid ones, odd ones (NUL, the noncharacter U+FDD0, emoji, keys of thousands of
 * characters, dates far out, huge numbers) and invalid ones (lone surrogates, wrong types,
 * missing fields, values out of range). The same seed gives the same sequence, so two servers
 * can be sent the same requests and their answers compared (test/support/store-differential.ts).
 *
 * A request may name "the k-th memory this server has answered with" (`{ memory: k }`): each
 * server substitutes its own id, since ids are random.
 */

import { mulberry32 } from '../../bench/workload.js';

export interface MemoryRef {
  memory: number;
}

/** A string, or a reference resolved per server to a memory id. */
export type Part = string | MemoryRef;

export interface SequencedRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  /** Path segments joined by '/', each percent-encoded once resolved. */
  path: Part[];
  query?: Record<string, Part>;
  /** A JSON value (memory references inside are resolved too), or raw text sent as it is. */
  body?: unknown;
  rawBody?: string;
}

const ESC = '\uFDD0';
export const ODD_USERS = ['alice', `nul\u0000user`, `esc${ESC}user${ESC}0`, 'é'.repeat(600), 'u'.repeat(3_000), '😀 emoji', 'default'];
const WORDS = ['garden', 'violin', 'May', '2023', 'last week', 'Caroline', 'ünïcødé', '😀', 'שלום', '\u0000', ESC, `${ESC}0`, '\\u0000', 'dog', 'Max', 'Paris'];
const LONE = ['\ud800', '\udfff', 'a\udc00b', '\ud83d'];

class Generator {
  constructor(readonly random: () => number) {}

  int(min: number, max: number): number {
    return min + Math.floor(this.random() * (max - min + 1));
  }

  chance(p: number): boolean {
    return this.random() < p;
  }

  pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.random() * items.length)];
  }

  text(): string {
    const words = Array.from({ length: this.int(1, 8) }, () => this.pick(WORDS));
    if (this.chance(0.05)) words.push('long'.repeat(this.int(100, 800)));
    return words.join(' ');
  }

  /** Text, sometimes not valid Unicode. */
  maybeBadText(p = 0.06): string {
    const text = this.text();
    return this.chance(p) ? `${text} ${this.pick(LONE)}` : text;
  }

  user(): string {
    if (this.chance(0.03)) return `${this.pick(ODD_USERS)}${this.pick(LONE)}`;
    if (this.chance(0.03)) return this.pick(['', ' ', `fresh-${this.int(0, 3)}`]);
    return this.pick(ODD_USERS);
  }

  metadata(): Record<string, unknown> {
    const entries: Array<[string, unknown]> = [];
    for (let i = this.int(0, 3); i > 0; i--) {
      const key = this.pick(['city', `k\u0000ey`, `k${ESC}`, 'n', 'flag', 'x'.repeat(this.int(1, 140)), this.pick(LONE)]);
      const value = this.pick<unknown>([this.pick(['Paris', `Pa\u0000ris`, `${ESC}`, '']), this.int(-5, 5), 1e308, 2 ** 64, 5e-324, -0.5, true, false, 'v'.repeat(this.int(1, 1100)), null, { deep: 1 }]);
      entries.push([key, value]);
    }
    return Object.fromEntries(entries);
  }

  /** A filter value that may match what `metadata` wrote. */
  filterPair(): [string, string | number | boolean] {
    return this.pick<[string, string | number | boolean]>([['city', 'Paris'], ['city', `Pa\u0000ris`], [`k\u0000ey`, `Pa\u0000ris`], [`k${ESC}`, ESC], ['n', 2], ['flag', true], ['city', '']]);
  }

  memoryRef(): Part {
    return this.chance(0.85) ? { memory: this.int(0, 40) } : this.pick(['nope', '..', '%00', `x${ESC}`, 'x'.repeat(2_000), '\u0000']);
  }

  instant(): unknown {
    return this.pick<unknown>(['2023-05-01', '2023-05-01T10:00:00Z', 0, -8.64e15, 8.64e15, 1_700_000_000_000, 'yesterday', '', 1e300, '-200000-01-01']);
  }

  platformAdd(): SequencedRequest {
    const messages = Array.from({ length: this.int(1, 4) }, () => {
      const message: Record<string, unknown> = { role: this.pick(['Caroline', 'Melanie', 'user', `ro${ESC}le`, 'ro\u0000le']), content: this.maybeBadText() };
      if (this.chance(0.6)) message.timestamp = this.pick<unknown>([1_704_067_200_000, 1_682_899_200_000 + this.int(0, 1e6), -1, 8.64e15, 8.64e15 + 1, 1.5, null, '2023']);
      return message;
    });
    const body: Record<string, unknown> = { request_id: this.pick([`r${this.int(0, 30)}`, `r\u0000${this.int(0, 3)}`, 'r'.repeat(3_000), `r${ESC}`]), user_id: this.user(), session_id: this.pick(['s1', 's2', `s\u0000`, `s${ESC}`]), messages };
    if (this.chance(0.05)) body.extra = this.pick(LONE);
    return { method: 'POST', path: ['add'], body: this.mutate(body) };
  }

  platformSearch(): SequencedRequest {
    const body: Record<string, unknown> = { query: this.maybeBadText(), user_id: this.user(), top_k: this.pick<unknown>([5, 10, 100, 0, -1, 1.5, '5', 2 ** 60]) };
    if (this.chance(0.3)) body.options = [this.text(), this.maybeBadText()];
    return { method: 'POST', path: ['search'], body: this.mutate(body) };
  }

  addParams(): Record<string, unknown> {
    const params: Record<string, unknown> = { text: this.maybeBadText(), user_id: this.user() };
    if (this.chance(0.5)) params.tags = [this.pick(WORDS), this.maybeBadText(0.03)];
    if (this.chance(0.4)) params.importance = this.pick<unknown>([0, 0.3, 1, 1.5, -0.1, '0.5']);
    if (this.chance(0.6)) params.metadata = this.metadata();
    if (this.chance(0.2)) params.source = this.pick(['chat', `src\u0000`, '']);
    return params;
  }

  updateParams(): Record<string, unknown> {
    const params: Record<string, unknown> = {};
    if (this.chance(0.6)) params.text = this.maybeBadText();
    if (this.chance(0.3)) params.tags = [this.pick(WORDS)];
    if (this.chance(0.3)) params.importance = this.pick<unknown>([0.9, 2]);
    if (this.chance(0.4)) params.metadata = this.metadata();
    return params;
  }

  filterParams(): Record<string, unknown> {
    const params: Record<string, unknown> = { user_id: this.user() };
    if (this.chance(0.4)) {
      const [key, value] = this.filterPair();
      params.filter = { [key]: value };
    }
    if (this.chance(0.2)) params.tag = this.pick(WORDS);
    if (this.chance(0.2)) params.since = this.instant();
    if (this.chance(0.1)) params.until = this.instant();
    if (this.chance(0.3)) params.limit = this.pick<unknown>([1, 5, 50, 0, 'x', 2000]);
    return params;
  }

  /** The same filters as a query string (`meta.<key>`; numbers and booleans as text). */
  filterQuery(): Record<string, Part> {
    const query: Record<string, Part> = { user_id: this.user() };
    if (this.chance(0.4)) {
      const [key, value] = this.filterPair();
      query[`meta.${key}`] = String(value);
    }
    if (this.chance(0.2)) query.tag = this.pick(WORDS);
    if (this.chance(0.2)) query.since = String(this.instant());
    if (this.chance(0.3)) query.limit = this.pick(['1', '5', '50', '0', 'x']);
    return query;
  }

  mem(): SequencedRequest {
    switch (this.int(0, 8)) {
      case 0:
      case 1:
        return { method: 'POST', path: ['mem'], body: this.mutate(this.addParams()) };
      case 2:
        return { method: 'GET', path: ['mem', 'search'], query: { ...this.filterQuery(), query: this.text(), ...(this.chance(0.2) ? { explain: 'true' } : {}) } };
      case 3:
        return { method: 'GET', path: ['mem', 'list'], query: this.filterQuery() };
      case 4:
        return { method: 'GET', path: ['mem', 'stats'], query: this.chance(0.5) ? { user_id: this.user() } : {} };
      case 5:
        return { method: 'GET', path: ['mem', this.memoryRef(), ...(this.chance(0.3) ? ['history'] : [])], query: { user_id: this.user() } };
      case 6:
        return { method: 'PATCH', path: ['mem', this.memoryRef()], query: { user_id: this.user() }, body: this.mutate(this.updateParams()) };
      case 7:
        return { method: 'DELETE', path: ['mem', this.memoryRef()], query: { user_id: this.user() } };
      default:
        return this.chance(0.2) ? { method: 'DELETE', path: ['users', this.pick(['fresh-0', 'fresh-1', `nul\u0000user`])] } : { method: 'GET', path: ['mem', 'list'], query: { user_id: this.user(), limit: '100' } };
    }
  }

  /** The params of one MemoryPool action (shared by /invoke and MCP). */
  action(): [string, Record<string, unknown>] {
    const action = this.pick(['add', 'add', 'search', 'list', 'get', 'update', 'history', 'delete', 'stats']);
    switch (action) {
      case 'add':
        return [action, this.addParams()];
      case 'search':
        return [action, { ...this.filterParams(), query: this.maybeBadText(), ...(this.chance(0.2) ? { explain: true } : {}) }];
      case 'list':
      case 'stats':
        return [action, this.filterParams()];
      case 'update':
        return [action, { id: this.memoryRef(), user_id: this.user(), ...this.updateParams() }];
      default:
        return [action, { id: this.memoryRef(), user_id: this.user(), ...(action === 'get' && this.chance(0.3) ? { history: true } : {}) }];
    }
  }

  invoke(): SequencedRequest {
    const [action, params] = this.action();
    return { method: 'POST', path: ['invoke'], body: this.mutate({ tool: 'memorypool', params: { action, ...params } }) };
  }

  mcp(id: number): SequencedRequest {
    const tools: Record<string, string> = { add: 'remember', search: 'recall', list: 'list_memories', get: 'get_memory', update: 'update_memory', delete: 'forget', history: 'get_memory', stats: 'memory_stats' };
    const [action, args] = this.action();
    return { method: 'POST', path: ['mcp'], body: { jsonrpc: '2.0', id, method: 'tools/call', params: { name: tools[action], arguments: this.mutate(args) } } };
  }

  /** Now and then one field of a valid body goes wrong: removed, or of another type. */
  mutate<T>(body: T): T {
    if (!this.chance(0.15) || typeof body !== 'object' || body === null) return body;
    const copy = structuredClone(body) as Record<string, unknown>;
    const keys = Object.keys(copy);
    if (keys.length === 0) return body;
    const key = this.pick(keys);
    if (this.chance(0.3)) delete copy[key];
    else copy[key] = this.pick<unknown>([null, 42, '', [], {}, true, -1, 'x', this.pick(LONE), { [this.pick(LONE)]: 1 }]);
    return copy as T;
  }

  raw(): SequencedRequest {
    const path = this.pick(['add', 'mem', 'invoke', 'search']);
    return { method: 'POST', path: [path], rawBody: this.pick(['{"text": "\\ud800"}', '{"text": "a\\u0000b"}', '{"text": "x"', '[]', 'null', '{"text": 1e999}', '{"a":' + '['.repeat(5_000) + ']'.repeat(5_000) + '}', `{"text": "ok", "user_id": "${'\\ud83d'}"}`]) };
  }
}

/** `count` requests from `seed`: about a fifth per door, a few raw bodies. */
export function requestSequence(seed: number, count: number): SequencedRequest[] {
  const generate = new Generator(mulberry32(seed));
  return Array.from({ length: count }, (_, i) => {
    const door = generate.random();
    if (door < 0.18) return generate.platformAdd();
    if (door < 0.3) return generate.platformSearch();
    if (door < 0.6) return generate.mem();
    if (door < 0.78) return generate.invoke();
    if (door < 0.97) return generate.mcp(i + 1);
    return generate.raw();
  });
}
