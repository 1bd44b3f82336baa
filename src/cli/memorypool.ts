#!/usr/bin/env node
import { Command, Option } from 'commander';
import { loadConfig, type ConfigInput } from '../config.js';
import { AppError, createError, isAppError } from '../errors.js';
import { packageVersion } from '../http/package-files.js';
import type { MemoryService } from '../memory/memory-service.js';
import { invoke } from '../protocol/invoke.js';
import { openService } from '../open-service.js';
import { exportPool, importPool } from './transfer.js';

/**
 * The memorypool command. Every data command goes through the same /invoke router as HTTP,
 * so the CLI accepts and rejects exactly what the API does. stdout carries JSON only; logs
 * go to stderr. Exit codes: 0 ok, 2 invalid input, 3 not found, 4 unauthorised,
 * 5 unavailable, 1 anything else.
 */

interface GlobalOptions {
  dataDir?: string;
  databaseUrl?: string;
  json?: boolean;
  embedder?: 'onnx' | 'hash' | 'http';
  modelDir?: string;
  modelPrecision?: 'fp32' | 'int8';
  pooling?: 'mean' | 'cls' | 'max' | 'lasttoken';
  queryPrefix?: string;
  documentPrefix?: string;
  denseWeight?: string;
  rerankerDir?: string;
}

const program = new Command()
  .name('memorypool')
  .version(packageVersion(), '-V, --version', 'print the version')
  .description('Long-term memory for AI agents: store, search and manage memories (JSON on stdout).\nWith no command and a BIT payload on stdin ({tool_id, tool, invoked_by, params}), runs it like POST /invoke.')
  .option('--data-dir <dir>', 'data directory (env MEMORYPOOL_DATA_DIR, default ~/.memorypool)')
  .option('--database-url <url>', 'keep memories in PostgreSQL instead (postgres://...; env MEMORYPOOL_DATABASE_URL)')
  .option('--json', 'compact JSON output (one line)')
  .addOption(new Option('--embedder <kind>', 'embedder (env MEMORYPOOL_EMBEDDER)').choices(['onnx', 'hash', 'http']))
  .option('--model-dir <dir>', 'local encoder folder: the built USE-lite or a sentence-transformers ONNX export (env MEMORYPOOL_MODEL_DIR)')
  .addOption(new Option('--model-precision <precision>', 'float or quantized model file (env MEMORYPOOL_MODEL_PRECISION)').choices(['fp32', 'int8']))
  .addOption(new Option('--pooling <mode>', "pooling of a brought model, overriding its 1_Pooling/config.json (env MEMORYPOOL_POOLING)").choices(['mean', 'cls', 'max', 'lasttoken']))
  .option('--query-prefix <text>', 'put before each search query, e.g. "query: " for e5 (env MEMORYPOOL_QUERY_PREFIX)')
  .option('--document-prefix <text>', 'put before each stored text, e.g. "passage: " for e5 (env MEMORYPOOL_DOCUMENT_PREFIX)')
  .option('--dense-weight <w>', 'dense share of the fused score, 0-1 (env MEMORYPOOL_DENSE_WEIGHT; default follows the encoder)')
  .option('--reranker-dir <dir>', "a cross-encoder exported to ONNX: re-scores each search's best hits (env MEMORYPOOL_RERANKER_DIR; off when unset)")
  .showHelpAfterError();

program
  .command('serve')
  .description('serve the HTTP API (MemoryPool protocol and the evaluation Add/Search contract)')
  .option('--host <host>', 'address to listen on (default 127.0.0.1)')
  .option('--port <port>', 'port (default 8751)')
  .option('--token <token>', 'require this token on every route but /health (env MEMORYPOOL_TOKEN)')
  .option('--tokens-file <file>', 'JSON file of tokens scoped to user-id prefixes')
  .option('--retention-days <days>', 'purge memories ingested more than this many days ago')
  .option('--cache-mb <mib>', 'memory budget for the users held in memory (env MEMORYPOOL_CACHE_MB)')
  .option('--processes <n>', 'server processes sharing the port, to spread HTTP and scoring over the cores; auto: one per core (env MEMORYPOOL_PROCESSES, default 1)')
  .option('--threads <n>', 'service threads of the server process, each holding the users it owns; 0: the service on the main thread (env MEMORYPOOL_THREADS, default 0)')
  .option('--tls-cert <file>', 'serve HTTPS with this PEM certificate (chain); needs --tls-key (env MEMORYPOOL_TLS_CERT)')
  .option('--tls-key <file>', 'the PEM private key for --tls-cert (env MEMORYPOOL_TLS_KEY)')
  .action(async (options: { host?: string; port?: string; token?: string; tokensFile?: string; retentionDays?: string; cacheMb?: string; processes?: string; threads?: string; tlsCert?: string; tlsKey?: string }) => {
    const config = loadConfig({ ...globalConfig(), host: options.host, port: options.port, token: options.token, tokensFile: options.tokensFile, retentionDays: options.retentionDays, cacheMb: options.cacheMb, processes: options.processes, threads: options.threads, tlsCert: options.tlsCert, tlsKey: options.tlsKey });
    // The HTTP server's modules load only for `serve`: the data commands start in about half the time.
    const { serve } = await import('../main.js');
    await serve(config);
  });

/** `--meta key=value`, repeatable: the pairs collected in order. */
const collectMeta = (pair: string, pairs: string[] = []): string[] => [...pairs, pair];
const META_FLAG = ['--meta <key=value>', 'metadata, repeatable (a number or true/false is stored as such)'] as const;
const META_FILTER_FLAG = ['--meta <key=value>', 'only memories whose metadata has this value, repeatable (all must match)'] as const;
const SINCE_FLAG = ['--since <time>', 'only memories from this time on (ISO 8601 or Unix ms; occurred_at, else created_at)'] as const;
const UNTIL_FLAG = ['--until <time>', 'only memories up to this time (ISO 8601 or Unix ms)'] as const;

interface MemoryFieldOptions {
  tags?: string;
  importance?: string;
  meta?: string[];
  agent?: string;
  run?: string;
  expires?: string;
  ttl?: string;
}

const EXPIRES_FLAG = ['--expires <time>', 'invisible from then on, then deleted (ISO 8601 or Unix ms; on update, "never" clears it)'] as const;
const TTL_FLAG = ['--ttl <seconds>', 'expire this many seconds from now (instead of --expires)'] as const;

/** The add and update flags as the API's fields (validated there, like any other input). */
function memoryFields(options: MemoryFieldOptions, typed: boolean): Record<string, unknown> {
  return {
    tags: options.tags === undefined ? undefined : options.tags.split(',').map((tag) => tag.trim()).filter(Boolean),
    importance: numberOrText(options.importance),
    metadata: options.meta === undefined ? undefined : metaPairs(options.meta, typed),
    agent_id: options.agent,
    run_id: options.run,
    // "never" is the flag's null: an update clears the expiry (the API refuses it on an add).
    expires_at: options.expires === 'never' ? null : numberOrText(options.expires),
    ttl_seconds: numberOrText(options.ttl),
  };
}

program
  .command('add')
  .description('store a memory')
  .argument('<text>', 'the memory text')
  .option('--tags <tags>', 'comma-separated tags')
  .option('--importance <n>', 'importance from 0 to 1 (default 0.5)')
  .option(...META_FLAG, collectMeta)
  .option('--agent <agent_id>', 'the agent it belongs to')
  .option('--run <run_id>', 'the run it belongs to')
  .option(...EXPIRES_FLAG)
  .option(...TTL_FLAG)
  .option('--source <source>', 'where it came from (default "cli")')
  .option('--user <user_id>', 'owner (default "default")')
  .action(async (text: string, options: MemoryFieldOptions & { source?: string; user?: string }) => {
    await runAction({ action: 'add', text, ...memoryFields(options, true), source: options.source ?? 'cli', user_id: options.user });
  });

program
  .command('update')
  .description('update a memory in place (same id, version + 1); each flag given replaces the stored field')
  .argument('<id>', 'memory id')
  .option('--text <text>', 'the corrected text')
  .option('--tags <tags>', 'comma-separated tags')
  .option('--importance <n>', 'importance from 0 to 1')
  .option(...META_FLAG, collectMeta)
  .option('--agent <agent_id>', 'move it to this agent')
  .option('--run <run_id>', 'move it to this run')
  .option(...EXPIRES_FLAG)
  .option(...TTL_FLAG)
  .option('--user <user_id>', 'owner (default "default")')
  .action(async (id: string, options: MemoryFieldOptions & { text?: string; user?: string }) => {
    await runAction({ action: 'update', id, text: options.text, ...memoryFields(options, true), user_id: options.user });
  });

interface FilterOptions {
  tag?: string;
  agent?: string;
  run?: string;
  entity?: string;
  where?: string;
  meta?: string[];
  since?: string;
  until?: string;
  limit?: string;
  user?: string[];
}

/** The filter flags as the API's fields; metadata values as text, matched as the type each memory stored. */
function filterFields(options: FilterOptions): Record<string, unknown> {
  return { tag: options.tag, entity: options.entity, agent_id: options.agent, run_id: options.run, where: options.where === undefined ? undefined : whereJson(options.where), filter: options.meta === undefined ? undefined : metaPairs(options.meta, false), since: options.since, until: options.until, limit: options.limit, user_id: options.user?.length === 1 ? options.user[0] : options.user };
}

/** The flags search and list share: what to consider, how many, whose. */
function withFilterFlags(command: Command, defaultLimit: number): Command {
  return command
    .option('--tag <tag>', 'only memories with this tag')
    .option('--agent <agent_id>', 'only memories of this agent')
    .option('--run <run_id>', 'only memories of this run')
    .option('--entity <name>', 'only memories mentioning this entity (any case; see the entities command)')
    .option('--where <json>', 'a filter expression, e.g. \'{"$or": [{"agent_id": "a"}, {"importance": {"$gte": 0.8}}]}\'')
    .option(...META_FILTER_FLAG, collectMeta)
    .option(...SINCE_FLAG)
    .option(...UNTIL_FLAG)
    .option('--limit <n>', `how many (default ${defaultLimit})`)
    .option('--user <user_id>', 'owner (default "default"); repeat it for up to 16 users, merged', (value: string, users: string[] = []) => [...users, value]);
}

withFilterFlags(program.command('search').description('rank memories for a query').argument('<query>', 'what to look for'), 10)
  .option('--no-rerank', 'the fused ranking alone, without the reranker (--reranker-dir)')
  .action(async (query: string, options: FilterOptions & { rerank?: boolean }) => {
    await runAction({ action: 'search', query, ...filterFields(options), rerank: options.rerank === false ? false : undefined });
  });

withFilterFlags(program.command('list').description('list memories, newest first'), 20)
  .option('--cursor <cursor>', 'continue after the page that gave this next_cursor (answers {memories, next_cursor})')
  .option('--all', 'every matching memory, one JSON line each, a page (of --limit, default 1000) at a time')
  .action(async (options: FilterOptions & { cursor?: string; all?: boolean }) => {
    if (options.all) {
      await withService((service) => streamAll(service, { ...filterFields(options), limit: options.limit ?? '1000' }));
      return;
    }
    await runAction({ action: options.cursor === undefined ? 'list' : 'page', ...filterFields(options), cursor: options.cursor });
  });

/** `list --all`: each page through the same action as /invoke, each memory a JSON line as soon as its page is read. */
async function streamAll(service: MemoryService, params: Record<string, unknown>): Promise<undefined> {
  let cursor: string | undefined;
  do {
    const page = (await invoke(service, { tool: 'memorypool', invoked_by: 'cli', params: dropUndefined({ ...params, action: 'page', cursor }) }, () => undefined)) as { memories: unknown[]; next_cursor: string | null };
    const lines = page.memories.map((memory) => JSON.stringify(memory) + '\n').join('');
    if (lines !== '' && !process.stdout.write(lines)) await new Promise((resolve) => process.stdout.once('drain', resolve));
    cursor = page.next_cursor ?? undefined;
  } while (cursor !== undefined);
  return undefined;
}

program
  .command('changes')
  .description('the change feed: the events after a cursor, {events, next_cursor}; with --follow, every event from there on as a JSON line, as it arrives')
  .option('--after <cursor>', 'the cursor: a next_cursor, or the seq of the last event handled (default 0: from the oldest held)')
  .option('--limit <n>', 'events per page (default 100)')
  .option('--wait <seconds>', 'hold until an event arrives, up to this many seconds (at most 60)')
  .option('--user <user_id>', "only this user's events (default: every user)")
  .option('--follow', 'keep following (long polls; events written by other processes and replicas too) until interrupted')
  .action(async (options: { after?: string; limit?: string; wait?: string; user?: string; follow?: boolean }) => {
    const params = { action: 'changes', after: options.after, limit: options.limit, wait: options.wait, user_id: options.user };
    if (options.follow) await withService((service) => followChanges(service, params));
    else await runAction(params);
  });

/** How long each long poll of `changes --follow` waits (seconds). */
const FOLLOW_WAIT = '30';

/**
 * `changes --follow`: each page through the same action as /invoke, each event a JSON line as soon
 * as it is read. Only reads: an interrupt ends the process at once, nothing to finish.
 */
async function followChanges(service: MemoryService, params: Record<string, unknown>): Promise<undefined> {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(0));
  let after = params.after;
  for (;;) {
    const page = (await invoke(service, { tool: 'memorypool', invoked_by: 'cli', params: dropUndefined({ ...params, after, wait: params.wait ?? FOLLOW_WAIT }) }, () => undefined)) as { events: unknown[]; next_cursor: string };
    const lines = page.events.map((event) => JSON.stringify(event) + '\n').join('');
    if (lines !== '' && !process.stdout.write(lines)) await new Promise((resolve) => process.stdout.once('drain', resolve));
    after = page.next_cursor;
  }
}

// The commands on one memory by its id.
for (const [action, description] of [
  ['get', 'show one memory'],
  ['history', "a memory's versions, oldest first"],
  ['delete', 'delete one memory, its history with it'],
] as const) {
  program
    .command(action)
    .description(description)
    .argument('<id>', 'memory id')
    .option('--user <user_id>', 'owner (default "default")')
    .action(async (id: string, options: { user?: string }) => {
      await runAction({ action, id, user_id: options.user });
    });
}

program
  .command('stats')
  .description('pool statistics: counts per user, bytes on disk, index state')
  .option('--user <user_id>', 'only this user')
  .action(async (options: { user?: string }) => {
    await runAction({ action: 'stats', user_id: options.user });
  });

program
  .command('entities')
  .description("who and what a user's memories mention, the most mentioned first")
  .option('--limit <n>', 'how many (default 100)')
  .option('--user <user_id>', 'owner (default "default")')
  .action(async (options: { limit?: string; user?: string }) => {
    await runAction({ action: 'entities', limit: options.limit, user_id: options.user });
  });

program
  .command('delete-user')
  .description('delete everything stored for a user, for good')
  .argument('<user_id>', 'the user')
  .action(async (userId: string) => {
    await withService(async (service) => ({ deleted_user: userId, deleted: await service.deleteUser(userId) }));
  });

program
  .command('export')
  .description("write a user's (or every user's) memories as JSONL, vectors included")
  .option('--user <user_id>', 'only this user')
  .option('--out <file>', 'file to write (default: stdout)')
  .action(async (options: { user?: string; out?: string }) => {
    await withService((service) => exportPool(service, options));
  });

program
  .command('import')
  .description('read memories from JSONL (as written by export, or the MemoryPool protocol\'s memories.jsonl); re-embeds when the model differs; skips malformed lines; repeatable')
  .argument('<file>', 'JSONL file, or - for stdin')
  .option('--user-id <user_id>', 'owner of the lines that name no user, as in a MemoryPool memories.jsonl (default "default")')
  .action(async (file: string, options: { userId?: string }) => {
    await withService((service) => importPool(service, file, options));
  });

program
  .command('mcp')
  .description('serve the Model Context Protocol over stdio (for desktop and IDE agents) on the data directory')
  .action(async () => {
    // Imported here: the MCP SDK costs every other command's start ~0.3 s.
    const { serveMcpStdio } = await import('../mcp/stdio-server.js');
    await serveMcpStdio(loadConfig(globalConfig()));
  });

program
  .command('invoke')
  .description('run a BIT payload from stdin, like POST /invoke')
  .action(async () => {
    await runPayload(await readStdin());
  });

function globalConfig(): Partial<ConfigInput> {
  const options = program.opts<GlobalOptions>();
  return {
    dataDir: options.dataDir,
    databaseUrl: options.databaseUrl,
    embedder: options.embedder,
    modelDir: options.modelDir,
    modelPrecision: options.modelPrecision,
    pooling: options.pooling,
    queryPrefix: options.queryPrefix,
    documentPrefix: options.documentPrefix,
    denseWeight: options.denseWeight,
    rerankerDir: options.rerankerDir,
  };
}

async function runAction(params: Record<string, unknown>): Promise<void> {
  await runPayload({ tool: 'memorypool', invoked_by: 'cli', params: dropUndefined(params) });
}

async function runPayload(payload: unknown): Promise<void> {
  await withService((service) => invoke(service, payload, () => undefined));
}

/** Opens the pool on the data directory, runs the work, prints its JSON result (unless undefined). */
async function withService(work: (service: MemoryService) => Promise<unknown>): Promise<void> {
  // A one-shot command writes its index caches at close, not on a timer.
  const { service, close } = await openService(loadConfig(globalConfig()), { role: 'command', indexFlushDelayMs: 0 });
  try {
    const result = await work(service);
    if (result !== undefined) printJson(result);
  } finally {
    await close();
  }
}

function printJson(value: unknown): void {
  const compact = program.opts<GlobalOptions>().json || !process.stdout.isTTY;
  process.stdout.write(JSON.stringify(value, null, compact ? undefined : 2) + '\n');
}

function numberOrText(value: string | undefined): unknown {
  if (value === undefined) return undefined;
  const number = Number(value);
  return value.trim() !== '' && Number.isFinite(number) ? number : value;
}

/**
 * `key=value` pairs as an object. `typed`: a number or true/false is stored as one (what the
 * command line cannot say otherwise); a filter's values stay text, which matches either way.
 */
function metaPairs(pairs: readonly string[], typed: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) throw createError('INVALID_PARAMETER', `--meta ${JSON.stringify(pair)}: expected key=value`);
    const value = pair.slice(at + 1);
    out[pair.slice(0, at)] = !typed ? value : value === 'true' ? true : value === 'false' ? false : numberOrText(value);
  }
  return out;
}

/** `--where`'s JSON (the service validates what it says). */
function whereJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw createError('INVALID_PARAMETER', 'where: --where must be JSON, e.g. \'{"agent_id": "a"}\'');
  }
}

function dropUndefined(params: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(params).filter(([, value]) => value !== undefined));
}

async function readStdin(): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8').trim();
  if (text === '') throw createError('BAD_REQUEST', 'Expected a BIT payload on stdin: {"tool_id", "tool", "invoked_by", "params"}');
  try {
    return JSON.parse(text);
  } catch {
    throw createError('MALFORMED_JSON', 'stdin is not valid JSON');
  }
}

function exitCodeFor(error: AppError): number {
  if (error.status === 404) return 3;
  if (error.status === 401 || error.status === 403) return 4;
  if (error.status === 503) return 5;
  if (error.status >= 400 && error.status < 500) return 2;
  return 1;
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  if (args.length === 0 && !process.stdin.isTTY) {
    // BIT exec mode: the payload arrives on stdin and the answer is JSON on stdout.
    await runPayload(await readStdin());
    return;
  }
  await program.parseAsync(process.argv);
}

main().catch((error: unknown) => {
  const appError = isAppError(error) ? error : createError('INTERNAL', error instanceof Error ? error.message : String(error));
  // `error` as on /invoke: the tool's own clients read that.
  const body = appError.code === 'VALIDATION_FAILED' ? { detail: appError.issues ?? [] } : { detail: { reason: appError.message, code: appError.code }, error: appError.message };
  process.stdout.write(JSON.stringify(body) + '\n');
  if (!isAppError(error)) process.stderr.write(`memorypool: ${(error as Error)?.stack ?? error}\n`);
  process.exitCode = exitCodeFor(appError);
});
