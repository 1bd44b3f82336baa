import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/helper.js';
import { freshDatabase } from '../support/postgres.js';
import { startReceiver, type ReceivedSpan, type Receiver } from '../support/otlp-receiver.js';
import { projectRoot, startServerProcess, type ServerProcess } from '../support/server-process.js';

/**
 * Traces as an operator gets them: the real server (a child process) started with nothing but
 * the standard OTLP variables, exporting to a receiver this test runs on a loopback port. The
 * spans are decoded here (otlp-receiver.ts) and their tree checked: an Add and a Search, each
 * under a caller's `traceparent`, down to the encoder, the store and retrieval.
 */

const USER = 'conv-trace-7f3a';
const TEXT = 'Caroline went to a support group about adoption yesterday.';
const QUERY = 'What did Caroline attend about adoption?';

function tracedEnv(receiver: Receiver, extra: Record<string, string> = {}): Record<string, string> {
  return {
    OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    OTEL_BSP_SCHEDULE_DELAY: '50',
    OTEL_SERVICE_NAME: 'memorypool-under-test',
    OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=test',
    ...extra,
  };
}

function traceparent(): { header: string; traceId: string; spanId: string } {
  const traceId = randomBytes(16).toString('hex');
  const spanId = randomBytes(8).toString('hex');
  return { header: `00-${traceId}-${spanId}-01`, traceId, spanId };
}

async function post(server: ServerProcess, route: string, body: unknown, headers: Record<string, string> = {}): Promise<unknown> {
  const response = await fetch(`${server.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  expect(response.status, route).toBe(200);
  return response.json();
}

async function addAndSearch(server: ServerProcess): Promise<{ add: ReturnType<typeof traceparent>; search: ReturnType<typeof traceparent> }> {
  const add = traceparent();
  await post(server, '/add', { request_id: 'r1', user_id: USER, session_id: 's1', messages: [{ role: 'Caroline', content: TEXT, timestamp: 1683554160000 }] }, { traceparent: add.header });
  const search = traceparent();
  const found = (await post(server, '/search', { query: QUERY, user_id: USER, top_k: 5 }, { traceparent: search.header })) as { data: unknown[] };
  expect(found.data.length).toBeGreaterThan(0);
  return { add, search };
}

/**
 * The spans of one trace once its server span has arrived and no other span of it has for a
 * while: the service threads (src/threads/) export their spans apart from the main thread's, so
 * a child may arrive after its parent.
 */
async function traceOf(receiver: Receiver, traceId: string, serverSpan: string): Promise<ReceivedSpan[]> {
  await receiver.waitFor((span) => span.traceId === traceId && span.name === serverSpan);
  const ofTrace = () => receiver.spans().filter((span) => span.traceId === traceId);
  for (let seen = ofTrace().length, quiet = 0; quiet < 6; quiet++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    if (ofTrace().length !== seen) [seen, quiet] = [ofTrace().length, 0];
  }
  return ofTrace();
}

function only(spans: ReceivedSpan[], name: string, parent?: ReceivedSpan): ReceivedSpan {
  const found = spans.filter((span) => span.name === name && (parent === undefined || span.parentSpanId === parent.spanId));
  expect(found.map((span) => span.name), `${name} under ${parent?.name ?? 'anything'}`).toEqual([name]);
  return found[0];
}

/**
 * The SDK starts each span at Date.now() (whole milliseconds) and ends it by the performance
 * clock's duration, so a child's edges may stand up to a millisecond past its parent's.
 */
const CLOCK_SLACK_NS = 1_000_000n;

function within(child: ReceivedSpan, parent: ReceivedSpan): void {
  expect(child.startNs + CLOCK_SLACK_NS >= parent.startNs && child.endNs <= parent.endNs + CLOCK_SLACK_NS, `${child.name} within ${parent.name}`).toBe(true);
}

/** Every string anywhere in the trace's attributes and resource. */
function strings(spans: ReceivedSpan[]): string[] {
  return spans.flatMap((span) => [...Object.values(span.attributes), ...Object.values(span.resource)].flatMap((value) => (Array.isArray(value) ? value : [value])).filter((value): value is string => typeof value === 'string'));
}

describe('OpenTelemetry traces', () => {
  // With service threads (src/threads/) the tree is the same: the context travels with each call
  // to a thread and back to the encoder. Protobuf, the default encoding, is decoded by the
  // receiver's own wire reader.
  it.each([
    [0, 'http/json'],
    [2, 'http/json'],
    [0, 'http/protobuf'],
  ])("exports the span tree of an Add and a Search under the caller's traceparent, with no user id or text on it (MEMORYPOOL_THREADS=%i, %s)", async (threads, protocol) => {
    const receiver = await startReceiver();
    const server = await startServerProcess({
      dataDir: await tempDir(),
      env: { ...tracedEnv(receiver, { OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: protocol }), MEMORYPOOL_EMBEDDER: 'onnx', MEMORYPOOL_ENCODER_WORKERS: '1', MEMORYPOOL_LOG_LEVEL: 'debug', MEMORYPOOL_THREADS: String(threads) },
      startTimeoutMs: 60_000,
    });
    const { add, search } = await addAndSearch(server);

    const addSpans = await traceOf(receiver, add.traceId, 'POST /add');
    const addServer = only(addSpans, 'POST /add');
    expect(addServer).toMatchObject({ parentSpanId: add.spanId, kind: 2, statusCode: 0 });
    expect(addServer.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/add', 'http.response.status_code': 200 });
    expect(addServer.resource).toMatchObject({ 'service.name': 'memorypool-under-test', 'deployment.environment.name': 'test', 'telemetry.sdk.language': 'nodejs' });
    const addOperation = only(addSpans, 'memorypool.add', addServer);
    expect(addOperation.attributes).toMatchObject({ 'memorypool.operation': 'add', 'memorypool.messages': 1 });
    const encode = only(addSpans, 'memorypool.encode', addOperation);
    expect(encode.attributes).toMatchObject({ 'memorypool.encoder.texts': 1, 'memorypool.encoder.priority': 'ingest' });
    const queue = only(addSpans, 'memorypool.encoder.queue', encode);
    const run = only(addSpans, 'memorypool.encoder.run', encode);
    expect(run.attributes).toMatchObject({ 'memorypool.encoder.batch_texts': 1, 'memorypool.encoder.texts': 1 });
    expect(run.attributes['memorypool.encoder.queue_wait_ms']).toBeGreaterThanOrEqual(0);
    expect(run.attributes['memorypool.encoder.thread_ms']).toBeGreaterThan(0);
    // The model's run as the encoder thread timed it, inside the run as this thread saw it.
    const thread = only(addSpans, 'memorypool.encoder.thread', run);
    within(thread, run);
    expect(queue.endNs <= run.startNs + CLOCK_SLACK_NS).toBe(true);
    const append = only(addSpans, 'memorypool.store.append', addOperation);
    expect(append.attributes).toMatchObject({ 'memorypool.store': 'jsonl', 'memorypool.store.records': 1 });
    within(only(addSpans, 'memorypool.store.fsync', append), append);
    expect(encode.endNs <= append.startNs + CLOCK_SLACK_NS).toBe(true);
    for (const span of [addOperation, encode, append]) within(span, addServer);

    const searchSpans = await traceOf(receiver, search.traceId, 'POST /search');
    const searchServer = only(searchSpans, 'POST /search');
    expect(searchServer).toMatchObject({ parentSpanId: search.spanId, kind: 2 });
    expect(searchServer.attributes).toMatchObject({ 'http.route': '/search', 'http.response.status_code': 200 });
    const searchOperation = only(searchSpans, 'memorypool.search', searchServer);
    expect(searchOperation.attributes).toMatchObject({ 'memorypool.operation': 'search', 'memorypool.search.top_k': 5 });
    const retrieval = only(searchSpans, 'memorypool.retrieval', searchOperation);
    expect(retrieval.attributes).toMatchObject({ 'memorypool.retrieval.units': 1, 'memorypool.retrieval.exhaustive': true, 'memorypool.retrieval.candidates': 1, 'memorypool.search.hits': 1 });
    expect(retrieval.attributes['memorypool.retrieval.prepare_ms']).toBeGreaterThanOrEqual(0);
    expect(retrieval.attributes['memorypool.retrieval.rank_ms']).toBeGreaterThanOrEqual(0);
    const queryEncode = only(searchSpans, 'memorypool.encode', searchOperation);
    expect(queryEncode.attributes).toMatchObject({ 'memorypool.encoder.priority': 'query' });
    within(retrieval, searchOperation);

    // Logs and traces meet: the request's log line names the id its spans carry.
    for (const [serverSpan, route] of [[addServer, '/add'], [searchServer, '/search']] as const) {
      const requestId = serverSpan.attributes['memorypool.request_id'];
      expect(typeof requestId).toBe('string');
      await server.waitForLog((line) => line.msg === 'request' && line.route === route && line.reqId === requestId);
    }

    const everything = [...addSpans, ...searchSpans];
    expect(everything.filter((span) => 'user.id' in span.attributes || 'memorypool.query' in span.attributes || 'memorypool.text' in span.attributes)).toEqual([]);
    expect(strings(everything).filter((value) => value.includes(USER) || value.includes('Caroline') || value.includes('adoption'))).toEqual([]);
  }, 120_000);

  it('puts user ids and texts on spans with MEMORYPOOL_TRACE_USER_IDS=true; an MCP tool call is a span of its own', async () => {
    const receiver = await startReceiver();
    const server = await startServerProcess({ dataDir: await tempDir(), env: { ...tracedEnv(receiver), MEMORYPOOL_TRACE_USER_IDS: 'true' } });
    const { add, search } = await addAndSearch(server);
    const addOperation = only(await traceOf(receiver, add.traceId, 'POST /add'), 'memorypool.add');
    expect(addOperation.attributes).toMatchObject({ 'user.id': USER, 'memorypool.text': TEXT });
    const searchOperation = only(await traceOf(receiver, search.traceId, 'POST /search'), 'memorypool.search');
    expect(searchOperation.attributes).toMatchObject({ 'user.id': USER, 'memorypool.query': QUERY });

    // An MCP tool call: its span between the HTTP request's and the operation's.
    const mcp = traceparent();
    const call = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'recall', arguments: { query: QUERY, user_id: USER } } };
    const answered = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', traceparent: mcp.header }, body: JSON.stringify(call) });
    expect(((await answered.json()) as { result?: { isError?: boolean } }).result?.isError).toBeUndefined();
    const mcpSpans = await traceOf(receiver, mcp.traceId, 'POST /mcp');
    const tool = only(mcpSpans, 'tools/call recall', only(mcpSpans, 'POST /mcp'));
    expect(tool.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'recall' });
    expect(only(mcpSpans, 'memorypool.search', tool).attributes).toMatchObject({ 'user.id': USER, 'memorypool.query': QUERY });
  }, 60_000);

  it('shows a PostgreSQL write as its transaction and each statement, values left out', async () => {
    const receiver = await startReceiver();
    const server = await startServerProcess({ dataDir: await tempDir(), env: { ...tracedEnv(receiver), MEMORYPOOL_DATABASE_URL: await freshDatabase() } });
    const { add } = await addAndSearch(server);
    const spans = await traceOf(receiver, add.traceId, 'POST /add');
    const append = only(spans, 'memorypool.store.append', only(spans, 'memorypool.add'));
    expect(append.attributes).toMatchObject({ 'memorypool.store': 'postgresql', 'db.system.name': 'postgresql' });
    const statements = spans.filter((span) => span.parentSpanId === append.spanId);
    // The request id, the user, the memory's rows and their stored features, then the change
    // feed's counter and event (one call), last before COMMIT.
    expect(statements.map((span) => span.name)).toEqual(['BEGIN', 'INSERT', 'INSERT', 'INSERT', 'INSERT', 'SELECT', 'COMMIT']);
    for (const statement of statements) {
      within(statement, append);
      expect(statement.attributes).toMatchObject({ 'db.system.name': 'postgresql', 'db.operation.name': statement.name });
    }
    expect(statements.some((span) => String(span.attributes['db.query.text']).includes('INSERT INTO memories'))).toBe(true);
    expect(statements.some((span) => String(span.attributes['db.query.text']).includes('INSERT INTO memory_features'))).toBe(true);
    expect(String(statements.at(-2)?.attributes['db.query.text'])).toContain('memorypool_record_changes(');
    expect(strings(spans).filter((value) => value.includes(USER) || value.includes('Caroline'))).toEqual([]);
  }, 60_000);

  it('starts a trace of its own without a traceparent, and samples as OTEL_TRACES_SAMPLER says', async () => {
    const receiver = await startReceiver();
    const sampledOut = traceparent();
    const server = await startServerProcess({ dataDir: await tempDir(), env: tracedEnv(receiver, { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '1' }) });
    // A caller that did not sample its trace: the parent-based sampler follows it.
    await post(server, '/search', { query: QUERY, user_id: USER, top_k: 5 }, { traceparent: `00-${sampledOut.traceId}-${sampledOut.spanId}-00` });
    await post(server, '/search', { query: QUERY, user_id: USER, top_k: 5 });
    const root = await receiver.waitFor((span) => span.name === 'POST /search');
    expect(root.parentSpanId).toBe('');
    expect(receiver.spans().filter((span) => span.traceId === sampledOut.traceId)).toEqual([]);
  }, 60_000);

  it('exports OTLP protobuf by default', async () => {
    const receiver = await startReceiver();
    const server = await startServerProcess({ dataDir: await tempDir(), env: { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${receiver.url}/v1/traces`, OTEL_BSP_SCHEDULE_DELAY: '50' } });
    await post(server, '/search', { query: QUERY, user_id: USER, top_k: 5 });
    const deadline = performance.now() + 15_000;
    // The HTTP span and the service's come in bodies of their own when the service runs on its threads (src/threads/).
    const sent = (name: string) => receiver.bodies().some(({ body }) => body.includes(name));
    while (!(sent('POST /search') && sent('memorypool.search')) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 25));
    const bodies = receiver.bodies();
    expect(bodies.length).toBeGreaterThan(0);
    expect(bodies.every(({ contentType }) => contentType === 'application/x-protobuf')).toBe(true);
    // A protobuf string field holds its UTF-8 bytes as they are: the span names are in the bodies.
    expect(sent('POST /search') && sent('memorypool.search')).toBe(true);
    // And decoded, the operation's span is the HTTP span's child, in one trace.
    const root = only(receiver.spans(), 'POST /search');
    expect(root).toMatchObject({ kind: 2, parentSpanId: '', statusCode: 0 });
    expect(root.attributes).toMatchObject({ 'http.route': '/search', 'http.response.status_code': 200 });
    expect(root.resource).toMatchObject({ 'service.name': 'memorypool', 'telemetry.sdk.language': 'nodejs' });
    const operation = only(receiver.spans(), 'memorypool.search', root);
    expect(operation.traceId).toBe(root.traceId);
    expect(operation.attributes).toMatchObject({ 'memorypool.operation': 'search', 'memorypool.search.top_k': 5 });
    within(operation, root);
  }, 60_000);

  it('loads no OpenTelemetry SDK without an endpoint', async () => {
    // A server started in a process of its own, an Add and a Search served, then the modules it loaded.
    const script = `
      import { createRequire } from 'node:module';
      import { loadConfig } from './src/config.ts';
      import { startServer } from './src/main.ts';
      const server = await startServer(loadConfig({ port: 0, embedder: 'hash', dataDir: process.argv[1], logLevel: 'silent' }, {}));
      const post = (route, body) => fetch(server.url + route, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      await post('/add', { request_id: 'r1', user_id: 'u', session_id: 's', messages: [{ role: 'a', content: 'hello there', timestamp: 1 }] });
      await post('/search', { query: 'hello', user_id: 'u', top_k: 5 });
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((file) => file.includes('@opentelemetry'));
      await server.close();
      process.stdout.write(JSON.stringify(loaded));
    `;
    const dataDir = await tempDir();
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, dataDir], { cwd: projectRoot, env: { PATH: process.env.PATH ?? '' }, timeout: 60_000 }, (error, out, err) =>
        error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out),
      ),
    );
    const packages = new Set((JSON.parse(stdout) as string[]).map((file) => /@opentelemetry\/[^/]+/.exec(file)![0]));
    // prom-client's process metrics require the API package (its exemplars), with or without tracing: no SDK, exporter or context manager.
    expect([...packages].filter((name) => name !== '@opentelemetry/api')).toEqual([]);
  }, 60_000);
});
