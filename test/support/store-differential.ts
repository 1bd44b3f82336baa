import type { FastifyInstance } from 'fastify';
import { isDeepStrictEqual } from 'node:util';
import { HashEmbedder } from '../../src/embedding/hash-embedder.js';
import { openStore } from '../../src/open-service.js';
import { buildServerApp } from '../../src/server-app.js';
import { Authenticator } from '../../src/http/auth.js';
import { silentLogger } from '../../src/logger.js';
import { MemoryService } from '../../src/memory/memory-service.js';
import { requestSequence, type Part, type SequencedRequest } from './request-sequence.js';

/**
 * Sends one seeded request sequence to a JSONL-backed and a PostgreSQL-backed app (app.inject,
 * one request at a time, the same to both) and compares what they answer: statuses, and bodies
 * once each server's own ids and the times it stamped are replaced by placeholders (object key
 * order aside; numbers within a millionth, see sameAnswer). Then both are restarted, and their
 * exports must match line for line, byte for byte, key order included. Used by
 * test/store/store-differential.test.ts and bench/store-differential.ts.
 */

export interface Side {
  name: 'jsonl' | 'postgres';
  app: FastifyInstance;
  service: MemoryService;
  /** The ids this side has answered with, in the order first seen. */
  ids: string[];
  serverErrors: number;
  where: { dataDir: string } | { databaseUrl: string };
}

export interface Difference {
  index: number;
  request: string;
  jsonl: { status: number; body: unknown };
  postgres: { status: number; body: unknown };
}

export interface DifferentialResult {
  seed: number;
  requests: number;
  statuses: Record<string, number>;
  serverErrors: { jsonl: number; postgres: number };
  differences: Difference[];
  /** The first place the two exports (after a restart; sorted lines) part, or null when they hold the same memories, byte for byte. */
  exportDifference: { at: number; jsonl: string; postgres: string; sizes: [number, number] } | null;
  exported: number;
}

export async function openSide(name: Side['name'], where: Side['where']): Promise<Side> {
  const side = { name, ids: [], serverErrors: 0, where } as unknown as Side;
  await reopenSide(side, false);
  return side;
}

/** The side's app and service, (re)built on its store: after a restart, everything is read from the store. */
async function reopenSide(side: Side, close = true): Promise<void> {
  if (close) await closeSide(side);
  const where = side.where;
  // No background loading after a start: which users a side holds (`cached` in /mem/stats) then
  // follows from the requests alone, the same on both sides, not from when each side fell idle.
  side.service = await MemoryService.open({ store: openStore('dataDir' in where ? { dataDir: where.dataDir } : { databaseUrl: where.databaseUrl }, silentLogger()), embedder: new HashEmbedder({ dimensions: 64 }), logger: silentLogger(), indexFlushDelayMs: 0, preload: false });
  side.app = await buildServerApp({ service: side.service, authenticator: Authenticator.fromConfig({}), logger: silentLogger() });
}

export async function closeSide(side: Side): Promise<void> {
  await side.app.close();
  await side.service.close();
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UUID_ANYWHERE = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;
const CONTENT_TIME = /\[(\d{4}-\d\d-\d\d \d\d:\d\d)\]/g;
const DAY_MS = 86_400_000;

function resolvePart(part: Part, side: Side): string {
  if (typeof part === 'string') return part;
  return side.ids.length === 0 ? 'no-memory-yet' : side.ids[part.memory % side.ids.length];
}

function resolveBody(value: unknown, side: Side): unknown {
  if (Array.isArray(value)) return value.map((item) => resolveBody(item, side));
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value);
    if (entries.length === 1 && entries[0][0] === 'memory' && typeof entries[0][1] === 'number') return resolvePart(value as Part, side);
    return Object.fromEntries(entries.map(([key, child]) => [key, resolveBody(child, side)]));
  }
  return value;
}

/** The ids in an answer (memories, hits, MCP's JSON text), learnt in the order they appear. */
function learnIds(body: unknown, side: Side): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body ?? null);
  for (const id of text.match(UUID_ANYWHERE) ?? []) if (!side.ids.includes(id)) side.ids.push(id);
}

/** Ids as `id#<n>` (the n-th this side learnt), times this run stamped as `<now>`; keys sorted unless asked to keep their order. */
export function normalise(value: unknown, side: Side, startedMs: number, sortKeys = true): unknown {
  if (typeof value === 'string') {
    if (UUID.test(value)) return `id#${side.ids.indexOf(value)}`;
    if (ISO_TIME.test(value) && Math.abs(Date.parse(value) - startedMs) < DAY_MS) return '<now>';
    const embedded = value.trim().startsWith('{') || value.trim().startsWith('[') ? tryParse(value) : undefined;
    if (embedded !== undefined) return { json: normalise(embedded, side, startedMs, sortKeys) };
    return value
      .replace(UUID_ANYWHERE, (id) => `id#${side.ids.indexOf(id)}`)
      .replace(CONTENT_TIME, (whole, time: string) => (Math.abs(Date.parse(`${time.replace(' ', 'T')}:00Z`) - startedMs) < DAY_MS ? '[<now>]' : whole));
  }
  if (Array.isArray(value)) return value.map((item) => normalise(item, side, startedMs, sortKeys));
  if (typeof value === 'object' && value !== null) {
    const out: Record<string, unknown> = {};
    const keys = Object.keys(value);
    for (const key of sortKeys ? keys.sort() : keys) {
      // Figures of the store itself, not of the memories: bytes a file or a row takes, the cache.
      if (key === 'bytes_on_disk' || key === 'cache') continue;
      out[key] = normalise((value as Record<string, unknown>)[key], side, startedMs, sortKeys);
    }
    if (Array.isArray(out.per_user)) out.per_user = [...out.per_user].sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
    return out;
  }
  return value;
}

/**
 * Equal, numbers within a millionth: a score's recency decay moves with the milliseconds between
 * the two servers' writes and searches, which is not a difference of the stores.
 */
export function sameAnswer(a: unknown, b: unknown): boolean {
  if (typeof a === 'number' && typeof b === 'number') return a === b || Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b));
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, i) => sameAnswer(item, b[i]));
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && !Array.isArray(a) && !Array.isArray(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => key in b && sameAnswer((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key]));
  }
  return isDeepStrictEqual(a, b);
}

function tryParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

async function send(side: Side, request: SequencedRequest): Promise<{ status: number; body: unknown }> {
  const path = '/' + request.path.map((part) => encodeURIComponent(resolvePart(part, side))).join('/');
  const query = request.query ? new URLSearchParams(Object.entries(request.query).map(([key, part]) => [key, resolvePart(part, side)])).toString() : '';
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (request.path[0] === 'mcp') headers.accept = 'application/json, text/event-stream';
  const payload = request.rawBody ?? (request.body === undefined ? undefined : JSON.stringify(resolveBody(request.body, side)));
  const response = await side.app.inject({ method: request.method, url: query ? `${path}?${query}` : path, headers: payload === undefined ? {} : headers, payload });
  if (response.statusCode >= 500) side.serverErrors++;
  const body = tryParse(response.body) ?? response.body;
  learnIds(body, side);
  return { status: response.statusCode, body };
}

/** A request as the failure message shows it (long strings cut). */
function describeRequest(request: SequencedRequest): string {
  return JSON.stringify(request, (_key, value) => (typeof value === 'string' && value.length > 80 ? `${value.slice(0, 80)}…(${value.length})` : value));
}

/** Every memory of every user as JSON text (fields in the order the export writes them), ids and stamped times normalised, sorted. */
async function exportAll(side: Side, startedMs: number): Promise<string[]> {
  const records: Array<{ id: string }> = [];
  for (const userId of await side.service.listUsers()) records.push(...(await side.service.exportRecords(userId)));
  // Ids no answer showed (the platform's Add returns none) are learnt in an order of the content, not of the store's listing.
  const byContent = (record: { id: string }) => JSON.stringify(normalise({ ...record, id: undefined }, side, startedMs));
  for (const record of [...records].sort((a, b) => byContent(a).localeCompare(byContent(b)))) learnIds(record.id, side);
  return records.map((record) => JSON.stringify(normalise(record, side, startedMs, false))).sort();
}

function firstDifference(left: string[], right: string[]): DifferentialResult['exportDifference'] {
  if (isDeepStrictEqual(left, right)) return null;
  const at = left.findIndex((record, i) => record !== right[i]);
  return { at, jsonl: left[at], postgres: right[at], sizes: [left.length, right.length] };
}

export async function runDifferential(jsonl: Side, postgres: Side, seed: number, count: number): Promise<DifferentialResult> {
  const startedMs = Date.now();
  const statuses: Record<string, number> = {};
  const differences: Difference[] = [];
  const sequence = requestSequence(seed, count);
  for (const [index, request] of sequence.entries()) {
    const a = await send(jsonl, request);
    const b = await send(postgres, request);
    statuses[a.status] = (statuses[a.status] ?? 0) + 1;
    const left = { status: a.status, body: normalise(a.body, jsonl, startedMs) };
    const right = { status: b.status, body: normalise(b.body, postgres, startedMs) };
    if (!sameAnswer(left, right)) differences.push({ index, request: describeRequest(request), jsonl: left, postgres: right });
  }
  // Restarted, each reads everything back from its store: the exports show what the stores kept.
  await reopenSide(jsonl);
  await reopenSide(postgres);
  const [left, right] = [await exportAll(jsonl, startedMs), await exportAll(postgres, startedMs)];
  return {
    seed,
    requests: count,
    statuses,
    serverErrors: { jsonl: jsonl.serverErrors, postgres: postgres.serverErrors },
    differences,
    exportDifference: firstDifference(left, right),
    exported: left.length,
  };
}
